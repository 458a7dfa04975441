"""The harness: roll agents out over ragen envs and report success, MI proxies and entropy (see docs/metrics.md)."""
