"""The trainer's Ray actors. Each is a plain class (testable without Ray) wrapped with ``ray.remote`` by the
runner; each sets ``torch.set_num_threads(1)`` first (2 threads per actor were ~10x slower on 2 cores)."""
