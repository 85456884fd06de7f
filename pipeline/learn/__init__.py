"""The learning demo: agents solve verifiable tasks through the proxy, a checker grades their answers and
posts the rewards (some late), and the live trainer turns that traffic into the policy that serves it."""
