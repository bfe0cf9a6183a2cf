"""opprobe's xla:cpu worker: compiles probe units with XLA's CPU compiler and runs them with XLA's runtime.

Started by opprobe (compiler_probe/xla) as `PYTHON xla_worker.py --parent=PID cpu`, never by hand. It speaks the
protocol of the pjrt backend's worker (compiler_probe/pjrt/worker.cpp) on file descriptor 3, so that opprobe drives
it with the same code: every message is a little-endian u64 length followed by the body.

  greeting  u8 ok; ok=0: str message; ok=1: i32 0, i32 0, u64 0, str platform, str version, i64 devices
  request   u8 execute, str HloModuleProto bytes, u32 n, n arrays
  reply     i32 stage (0 ok, 1 compile, 2 execute, 3 transfer), i32 absl status code, str message, u32 n, n arrays
  array     i32 PJRT_Buffer_Type, u32 rank, rank x i64 dims, str dense row-major bytes
  str       u64 length, bytes

A unit is converted from HloModuleProto to StableHLO with jaxlib's own converter (the one jax uses for
`xla_computation_to_mlir_module`), compiled for the CPU client's first device and, when asked, executed once.
"""

import os
import signal
import struct
import sys

os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

SOCK_FD = 3
STATUS_CODES = [
    "OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS",
    "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED",
    "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED",
]
STAGE_OK, STAGE_COMPILE, STAGE_EXECUTE, STAGE_TRANSFER = 0, 1, 2, 3


def read_exact(n):
    chunks = []
    while n > 0:
        b = os.read(SOCK_FD, min(n, 1 << 20))
        if not b:
            return None
        chunks.append(b)
        n -= len(b)
    return b"".join(chunks)


def read_message():
    head = read_exact(8)
    if head is None:
        return None
    (n,) = struct.unpack("<Q", head)
    return read_exact(n)


def write_message(body):
    data = struct.pack("<Q", len(body)) + body
    view = memoryview(data)
    while view:
        n = os.write(SOCK_FD, view)
        view = view[n:]


def pack_str(b):
    if isinstance(b, str):
        b = b.encode("utf-8", "replace")
    return struct.pack("<Q", len(b)) + b


class Reader:
    def __init__(self, data):
        self.data, self.pos = data, 0

    def take(self, fmt):
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.data):
            raise ValueError("truncated request")
        v = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return v[0] if len(v) == 1 else v

    def str(self):
        n = self.take("<Q")
        if self.pos + n > len(self.data):
            raise ValueError("truncated request")
        s = self.data[self.pos:self.pos + n]
        self.pos += n
        return s

    def array(self):
        t = self.take("<i")
        rank = self.take("<I")
        dims = [self.take("<q") for _ in range(rank)]
        return t, dims, self.str()


def split_status(message):
    """'INVALID_ARGUMENT: text' -> (3, 'text'); messages without a code prefix are UNKNOWN."""
    head, sep, rest = message.partition(": ")
    if sep and head in STATUS_CODES:
        return STATUS_CODES.index(head), rest
    return 2, message


def reply(stage, code, message, outputs=()):
    body = struct.pack("<ii", stage, code) + pack_str(message) + struct.pack("<I", len(outputs))
    for t, dims, data in outputs:
        body += struct.pack("<iI", t, len(dims)) + b"".join(struct.pack("<q", d) for d in dims) + pack_str(data)
    write_message(body)


def main(argv):
    if len(argv) < 3 or not argv[1].startswith("--parent="):
        sys.stderr.write("usage: xla_worker.py --parent=PID cpu (started by opprobe)\n")
        return 64
    try:  # die with opprobe, as the pjrt worker does (PR_SET_PDEATHSIG = 1, SIGKILL = 9)
        import ctypes
        ctypes.CDLL(None).prctl(1, 9)
    except (OSError, AttributeError):
        pass
    if os.getppid() != int(argv[1][len("--parent="):]):
        return 0
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # opprobe decides when the worker ends
    target = argv[2]
    try:
        import numpy as np
        import jaxlib
        import jax
        jax.config.update("jax_enable_x64", True)  # f64/s64 inputs must reach XLA as they are
        import ml_dtypes
        from jax._src.lib import _jax, xla_client
    except Exception as e:  # noqa: BLE001 - any import failure means the environment cannot be used
        write_message(struct.pack("<B", 0) + pack_str(
            "xla backend: jaxlib is not usable in {} ({}: {}); install it with: {} -m pip install -r "
            "requirements/xla.txt (scripts/test creates this environment), or name another Python with "
            "OPPROBE_XLA_PYTHON or xla:cpu,python=PATH".format(
                sys.executable, type(e).__name__, str(e).splitlines()[0] if str(e) else "", sys.executable)))
        return 0
    if target != "cpu":
        write_message(struct.pack("<B", 0) + pack_str(
            "xla backend: unknown platform '{}' (this worker serves cpu)".format(target)))
        return 0
    try:
        device = jax.devices("cpu")[0]
        client = device.client
    except Exception as e:  # noqa: BLE001
        write_message(struct.pack("<B", 0) + pack_str("xla backend: no XLA CPU client: {}".format(e)))
        return 0

    dtypes = {
        1: np.dtype(np.bool_), 2: np.dtype(np.int8), 3: np.dtype(np.int16), 4: np.dtype(np.int32),
        5: np.dtype(np.int64), 6: np.dtype(np.uint8), 7: np.dtype(np.uint16), 8: np.dtype(np.uint32),
        9: np.dtype(np.uint64), 10: np.dtype(np.float16), 11: np.dtype(np.float32), 12: np.dtype(np.float64),
        13: np.dtype(ml_dtypes.bfloat16), 14: np.dtype(np.complex64), 15: np.dtype(np.complex128),
    }
    codes = {v: k for k, v in dtypes.items()}

    version = "jaxlib {} (XLA {} {})".format(jaxlib.__version__, client.platform, client.platform_version)
    write_message(struct.pack("<B", 1) + struct.pack("<iiQ", 0, 0, 0) + pack_str(client.platform) +
                  pack_str(version) + struct.pack("<q", len(jax.devices("cpu"))))
    devices = xla_client.DeviceList((device,))

    while True:
        request = read_message()
        if request is None:
            return 0
        try:
            r = Reader(request)
            execute = r.take("<B")
            proto = r.str()
            inputs = [r.array() for _ in range(r.take("<I"))]
        except (ValueError, struct.error) as e:
            reply(STAGE_COMPILE, 13, "opprobe xla worker: malformed request: {}".format(e))
            continue
        try:
            module = _jax.mlir.hlo_to_stablehlo(proto)
        except Exception as e:  # noqa: BLE001 - XLA's own refusal, reported as it is
            code, msg = split_status(str(e))
            reply(STAGE_COMPILE, code, "HloModuleProto to StableHLO: " + msg)
            continue
        try:
            exe = client.compile_and_load(module, devices, xla_client.CompileOptions())
        except Exception as e:  # noqa: BLE001
            code, msg = split_status(str(e))
            reply(STAGE_COMPILE, code, msg)
            continue
        if not execute:
            reply(STAGE_OK, 0, "")
            continue
        try:
            args = []
            for t, dims, data in inputs:
                if t not in dtypes:
                    raise ValueError("unknown PJRT_Buffer_Type {}".format(t))
                host = np.frombuffer(data, dtype=dtypes[t]).reshape(dims)
                args.append(jax.device_put(host, device))
        except Exception as e:  # noqa: BLE001
            code, msg = split_status(str(e))
            reply(STAGE_TRANSFER, code, msg)
            continue
        try:
            results = exe.execute(args)
            outputs = []
            for res in results:
                host = np.asarray(res)  # tobytes() is row-major whatever the layout; ascontiguousarray would make 0-d arrays 1-d
                if host.dtype not in codes:
                    raise ValueError("output of element type {} cannot be read back".format(host.dtype))
                outputs.append((codes[host.dtype], list(host.shape), host.tobytes()))
        except Exception as e:  # noqa: BLE001
            code, msg = split_status(str(e))
            reply(STAGE_EXECUTE, code, msg)
            continue
        reply(STAGE_OK, 0, "", outputs)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
