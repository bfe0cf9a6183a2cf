# Runs a command with a pseudo-terminal as its stdin, stdout and stderr (what it sees on a real terminal), copies
# everything it writes there into OUT, and exits with its status. Usage: run_in_pty.py OUT COMMAND [ARGS...]
import os
import pty
import sys


def main():
    out = open(sys.argv[1], "wb")

    def read(fd):
        data = os.read(fd, 4096)
        out.write(data)
        return data

    status = pty.spawn(sys.argv[2:], read)
    out.close()
    sys.exit(os.waitstatus_to_exitcode(status))


if __name__ == "__main__":
    main()
