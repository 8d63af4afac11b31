"""Runs a command and checks its peak resident memory (argv: MiB_at_most command...): prints
'peak ok' when the child's peak stayed at or under MiB_at_most, else what it reached; exits with
the command's own status so that `not` and FileCheck see its failure as usual."""
import resource
import subprocess
import sys

at_most_mib = float(sys.argv[1])
status = subprocess.run(sys.argv[2:]).returncode
peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # (ru_maxrss is in KiB on Linux)
print("peak ok" if peak_mib <= at_most_mib else f"peak {peak_mib:.0f} MiB, more than {at_most_mib:.0f} MiB", flush=True)
sys.exit(status)
