"""The harness: roll agents out over ragen envs and report success, MI proxies and entropy (see docs/metrics.md)."""

# The collapse family registers its metrics in harness.metrics' registry; importing it with the package makes the
# registry whole however it is reached, without an import circle between the two modules.
import harness.mi.estimator  # noqa: F401
