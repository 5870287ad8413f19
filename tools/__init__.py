"""The lab beside the package: reports, benchmarks, Ape-X measurements, the campaign of
runs and generated files, one sub-package each (tools/README.md lists every command)."""
import os

# The checkout: tools/ is one folder below it (the commands run from there).
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
