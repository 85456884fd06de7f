"""TensorZero's gateway as a process: run with the TensorZero environment's Python (standard library and
``tensorzero`` only), print its OpenAI base URL, serve until SIGTERM.

    var/peers/tensorzero/bin/python bench/tensorzero_gateway.py CONFIG.toml
"""

from __future__ import annotations

import signal
import sys
import threading

import tensorzero


def main() -> None:
    gateway = tensorzero._start_http_gateway(  # noqa: SLF001 - the wheel's documented embedded-gateway entry
        config_file=sys.argv[1], clickhouse_url=None, postgres_url=None, valkey_url=None, async_setup=False
    )
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    print(f"gateway ready on {gateway.base_url}", flush=True)
    stop.wait()
    gateway.close()


if __name__ == "__main__":
    main()
