"""The calls-captured-so-far counter on stderr (`opprobe capture`, `opprobe analyze -- python script.py`).

`tty`: one line redrawn in place (`\\r`, erase to the end of the line) a few times a second while the script runs,
erased when it ends. The script's own writes to a terminal (sys.stdout, sys.stderr) erase the counter first, and
it is redrawn only after a complete line, so the script's output is never mixed with it. `lines`: a plain line
every few seconds (for logs, with --progress where stderr is not a terminal). The counter runs in a thread of its
own, so the calls themselves pay nothing for it.
"""

import sys
import threading

TTY_INTERVAL_S = 0.1
LINES_INTERVAL_S = 5.0

_ERASE = "\r\x1b[K"


class _ErasingStream(object):
    """A terminal stream of the script that erases the counter before the script writes to it."""

    def __init__(self, stream, counter):
        self._stream = stream
        self._counter = counter

    def write(self, text):
        with self._counter.lock:
            self._counter.erase(text)
            return self._stream.write(text)

    def writelines(self, lines):
        lines = list(lines)
        with self._counter.lock:
            self._counter.erase("".join(lines))
            return self._stream.writelines(lines)

    def __getattr__(self, name):
        return getattr(self._stream, name)


class Counter(object):
    def __init__(self, recorder, mode, stream=None):
        self._recorder = recorder
        self._mode = mode
        self._out = stream or sys.stderr
        self.lock = threading.RLock()  # held while the counter or the script writes to the terminal
        self._drawn = False       # the counter's line is on the terminal now
        self._midline = False     # the script's last write to the terminal did not end its line
        self._stop = threading.Event()
        self._thread = None
        self._wrapped = []        # (name in sys, original stream)
        self._last = -1

    def _text(self):
        r = self._recorder
        return "opprobe: captured %d calls (%d distinct)" % (r.calls_so_far(), len(r.order))

    def start(self):
        if self._mode == "tty":
            for name in ("stdout", "stderr"):
                s = getattr(sys, name, None)
                try:
                    tty = s is not None and s.isatty()
                except Exception:  # noqa: BLE001  (a replaced stream without isatty)
                    tty = False
                if tty:
                    self._wrapped.append((name, s))
                    setattr(sys, name, _ErasingStream(s, self))
            if self._wrapped and self._wrapped[-1][0] == "stderr":
                self._out = self._wrapped[-1][1]
        self._thread = threading.Thread(target=self._run, name="opprobe-capture-counter", daemon=True)
        self._thread.start()

    def _run(self):
        interval = TTY_INTERVAL_S if self._mode == "tty" else LINES_INTERVAL_S
        while not self._stop.wait(interval):
            try:
                self._draw()
            except Exception:  # noqa: BLE001  (a closed stream: the counter stops, the script goes on)
                return

    def _draw(self):
        with self.lock:
            total = self._recorder.calls_so_far()
            if total == self._last:
                return
            if self._mode == "tty":
                if self._midline:
                    return
                self._out.write(_ERASE + self._text())
                self._drawn = True
            else:
                self._out.write(self._text() + " so far\n")
            self._out.flush()
            self._last = total

    def erase(self, text):
        """Called, holding `lock`, before the script writes `text` to a terminal stream."""
        if not text:
            return
        if self._drawn:
            self._out.write(_ERASE)
            self._out.flush()
            self._drawn = False
            self._last = -1
        self._midline = not text.endswith("\n")

    def stop(self):
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        for name, s in self._wrapped:
            if isinstance(getattr(sys, name, None), _ErasingStream):
                setattr(sys, name, s)
        with self.lock:
            if self._drawn:
                try:
                    self._out.write(_ERASE)
                    self._out.flush()
                except Exception:  # noqa: BLE001
                    pass
                self._drawn = False
