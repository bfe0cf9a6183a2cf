"""`python -m opprobe ARGS`: the opprobe command line (the same binary opprobe.analyze drives)."""
import os
import sys

from opprobe._locate import OpprobeError, find_binary


def main():
    try:
        binary = find_binary()
    except OpprobeError as e:
        sys.stderr.write("opprobe: %s\n" % e)
        return 2
    sys.stdout.flush()
    os.execv(binary, [binary] + sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
