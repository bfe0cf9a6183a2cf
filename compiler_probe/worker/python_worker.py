"""opprobe's worker for the compilers that take XLA's HLO through StableHLO: XLA's own CPU compiler and runtime
(`xla:cpu`, compiler_probe/xla) and IREE's llvm-cpu compiler and runtime (`iree:llvm-cpu`, compiler_probe/iree).

Started by opprobe as `PYTHON opprobe-xla-worker.py --parent=PID TARGET [compile_timeout=SECONDS]` (TARGET `xla:cpu`
or `iree:llvm-cpu`; compiler_probe/worker/python.h), never by hand. It
speaks the protocol of opprobe's workers (compiler_probe/worker/protocol.h) on file descriptor 3, as the native
worker does, so that opprobe drives it with the same code: every message is a little-endian u64 length followed by
the body.

  greeting  u8 ok; ok=0: str message; ok=1: i32 0, i32 0, u64 0, str platform, str version, i64 devices
  request   u8 flags (1 execute, 2 compile a whole program), str HloModuleProto bytes, u32 n, n arrays, and with
            flag 2: str CompileOptionsProto bytes
  reply     i32 stage (0 ok, 1 compile, 2 execute, 3 transfer), i32 absl status code, str message, u32 n, n arrays,
            and to flag 2 when it compiled: stats
  stats     u8 1, u8 has_memory, i64 code, argument, output, alias, temp and peak bytes per device, u32 0, u32 0
  array     i32 PJRT_Buffer_Type, u32 rank, rank x i64 dims, str dense row-major bytes
  str       u64 length, bytes

A unit is converted from HloModuleProto to StableHLO with jaxlib's own converter (the one jax uses for
`xla_computation_to_mlir_module`). `xla:cpu`: compiled for XLA's CPU client's first device and, when asked, executed
once. `iree:llvm-cpu`: printed as StableHLO text, compiled by `iree-compile` (llvm-cpu, the host CPU) in a child
process, and executed by IREE's runtime (the one `iree-run-module` uses) on its single-threaded local device. When
`iree-compile` itself crashes, the worker ends with the same signal, so that opprobe reports the crash as it does
XLA's: an `error` verdict naming the signal and the compiler's last lines.

Nothing outlives opprobe: the worker dies with it (PR_SET_PDEATHSIG, set by opprobe when it starts the worker and
again here), and `iree-compile` dies with the worker (PR_SET_PDEATHSIG in the child before it runs) and after
`compile_timeout` seconds (opprobe passes its probe timeout and a margin: its own deadline comes first while it is
there). `iree-compile` runs in the worker's process group, which opprobe kills whole.
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
PR_SET_PDEATHSIG = 1
LIBC = None  # ctypes' handle on the C library, for prctl (main)


def die_with_parent():
    """PR_SET_PDEATHSIG SIGKILL for the calling process: it dies when the thread that started it ends."""
    if LIBC is not None:
        LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def read_exact(n):
    """n bytes read straight into one buffer (a batch's request is hundreds of megabytes: no chunks joined)."""
    buf = bytearray(n)
    view = memoryview(buf)
    while view:
        got = os.readv(SOCK_FD, [view[:1 << 24]])
        if not got:
            return None
        view = view[got:]
    return buf


def read_message():
    head = read_exact(8)
    if head is None:
        return None
    (n,) = struct.unpack("<Q", head)
    return read_exact(n)


def write_message(*parts):
    """One message of the parts' bytes, written as they are (gathered: no part copied behind another)."""
    views = [memoryview(p).cast("B") for p in parts]
    views.insert(0, memoryview(struct.pack("<Q", sum(v.nbytes for v in views))))
    while views:
        n = os.writev(SOCK_FD, views[:512])
        while views and n >= views[0].nbytes:
            n -= views[0].nbytes
            views.pop(0)
        if views and n:
            views[0] = views[0][n:]


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
        """The next length-prefixed bytes, as a view of the request (not a copy)."""
        n = self.take("<Q")
        if self.pos + n > len(self.data):
            raise ValueError("truncated request")
        s = memoryview(self.data)[self.pos:self.pos + n]
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


def reply(stage, code, message, outputs=(), stats=None):
    # One join at the end: appending each output to the body copied all before it (a batch of units returns
    # hundreds of outputs, megabytes in all).
    parts = [struct.pack("<ii", stage, code), pack_str(message), struct.pack("<I", len(outputs))]
    for t, dims, data in outputs:
        parts.append(struct.pack("<iI", t, len(dims)) + b"".join(struct.pack("<q", d) for d in dims) +
                     struct.pack("<Q", memoryview(data).nbytes))
        parts.append(data)
    if stats is not None:
        memory = stats.get("memory")
        parts.append(struct.pack("<BB", 1, 1 if memory else 0))
        parts.append(struct.pack("<6q", *(memory or (0,) * 6)))
        parts.append(struct.pack("<II", 0, 0))  # no vendor-library calls: those are the GPU compiler's
    write_message(*parts)


def numpy_types():
    import numpy as np
    import ml_dtypes
    dtypes = {
        1: np.dtype(np.bool_), 2: np.dtype(np.int8), 3: np.dtype(np.int16), 4: np.dtype(np.int32),
        5: np.dtype(np.int64), 6: np.dtype(np.uint8), 7: np.dtype(np.uint16), 8: np.dtype(np.uint32),
        9: np.dtype(np.uint64), 10: np.dtype(np.float16), 11: np.dtype(np.float32), 12: np.dtype(np.float64),
        13: np.dtype(ml_dtypes.bfloat16), 14: np.dtype(np.complex64), 15: np.dtype(np.complex128),
    }
    return dtypes, {v: k for k, v in dtypes.items()}


class CompileError(Exception):
    """A compiler's refusal: (absl status code, message)."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code, self.message = code, message


class XlaCpu:
    """XLA's CPU compiler and runtime from jaxlib."""

    def __init__(self, jax, xla_client):
        self.jax = jax
        self.device = jax.devices("cpu")[0]
        self.client = self.device.client
        self.devices = xla_client.DeviceList((self.device,))
        self.options = xla_client.CompileOptions
        import jaxlib
        self.platform = self.client.platform
        self.version = "jaxlib {} (XLA {} {})".format(jaxlib.__version__, self.client.platform,
                                                      self.client.platform_version)
        self.device_count = len(jax.devices("cpu"))

    def compile(self, stablehlo):
        try:
            return self.client.compile_and_load(stablehlo, self.devices, self.options())
        except Exception as e:  # noqa: BLE001 - XLA's own refusal, reported as it is
            raise CompileError(*split_status(str(e))) from e

    def compile_program(self, stablehlo, compile_options):
        """A whole program compiled with the given CompileOptionsProto, not run: its memory per device, as XLA's
        CPU compiler lays it out (code, arguments, outputs, aliased, temporaries, peak)."""
        try:
            exe = self.client.compile_and_load(stablehlo, self.devices, self.options.ParseFromString(compile_options))
        except Exception as e:  # noqa: BLE001 - XLA's own refusal, reported as it is
            raise CompileError(*split_status(str(e))) from e
        m = exe.get_compiled_memory_stats()
        code = max(m.generated_code_size_in_bytes, exe.size_of_generated_code_in_bytes())
        return {"memory": (code, m.argument_size_in_bytes, m.output_size_in_bytes, m.alias_size_in_bytes,
                           m.temp_size_in_bytes, 0)}

    def transfer(self, host_arrays):
        return [self.jax.device_put(h, self.device) for h in host_arrays]

    def execute(self, exe, args):
        return exe.execute(args)


# iree-compile's options: the llvm-cpu backend of the local HAL device, code for the host CPU, StableHLO input, f64
# kept as f64 (IREE demotes it to f32 by default). Verdicts are cached under the backend's version (IreeLlvmCpu's
# `version`): a change here that can change a verdict changes that string too.
IREE_COMPILE_FLAGS = ["--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=llvm-cpu",
                      "--iree-llvmcpu-target-cpu=host", "--iree-input-type=stablehlo",
                      "--iree-input-demote-f64-to-f32=false"]


class IreeLlvmCpu:
    """IREE: iree-compile for llvm-cpu, then IREE's runtime on the local-sync device."""

    def __init__(self, jax, compile_timeout):
        from importlib.metadata import version
        import iree.compiler.version
        import iree.runtime
        from iree.compiler.tools.binaries import find_tool
        from jax._src.interpreters import mlir as jax_mlir
        from jax._src.lib.mlir import ir
        import jaxlib
        self.rt, self.ir, self.make_context = iree.runtime, ir, jax_mlir.make_ir_context
        self.iree_compile = find_tool("iree-compile")
        self.compile_timeout = compile_timeout
        self.config = iree.runtime.Config("local-sync")
        self.platform = "llvm-cpu"
        self.version = "IREE {} ({} @ {}; llvm-cpu, host CPU; StableHLO from jaxlib {})".format(
            version("iree-base-compiler"), iree.compiler.version.VERSION,
            iree.compiler.version.REVISIONS.get("IREE", "?")[:12], jaxlib.__version__)
        self.device_count = 1

    def compile(self, stablehlo):
        import subprocess
        try:
            with self.make_context():
                text = self.ir.Module.parse(stablehlo).operation.get_asm(enable_debug_info=False)
        except Exception as e:  # noqa: BLE001
            raise CompileError(3, "StableHLO from jaxlib cannot be printed: {}".format(e)) from e
        try:
            # preexec_fn runs in the forked child before the exec: only a prctl call through ctypes, loaded before.
            p = subprocess.run([self.iree_compile, "-", "-o", "-"] + IREE_COMPILE_FLAGS, input=text.encode(),
                               capture_output=True, timeout=self.compile_timeout, preexec_fn=die_with_parent)
        except subprocess.TimeoutExpired as e:  # run() killed it
            raise CompileError(4, "iree-compile timed out after {:g} s".format(self.compile_timeout)) from e
        err = p.stderr.decode("utf-8", "replace")
        if p.returncode < 0:  # the compiler crashed: end the same way (see the module's docstring)
            import resource
            sys.stderr.write(err[-4096:])
            sys.stderr.flush()
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # the compiler's crash, not ours: no core file
            signal.signal(-p.returncode, signal.SIG_DFL)
            os.kill(os.getpid(), -p.returncode)
        if p.returncode != 0:
            errors = [line.partition(" error: ")[2] for line in err.splitlines() if " error: " in line]
            first = errors[0] if errors else (err.strip().splitlines() or ["exit {}".format(p.returncode)])[0]
            raise CompileError(3, "iree-compile: {}\n{}".format(first, err))
        vm = self.rt.VmModule.copy_buffer(self.config.vm_instance, p.stdout)
        context = self.rt.SystemContext(config=self.config)
        context.add_vm_module(vm)
        return context, context.modules[vm.name]["main"]

    def compile_program(self, stablehlo, compile_options):
        """A whole program compiled by iree-compile: IREE says nothing of the memory it lays out."""
        self.compile(stablehlo)
        return {"memory": None}

    def transfer(self, host_arrays):
        return host_arrays

    def execute(self, exe, args):
        results = exe[1](*args)
        return list(results) if isinstance(results, (list, tuple)) else [results]


def main(argv):
    global LIBC
    if len(argv) < 3 or not argv[1].startswith("--parent="):
        sys.stderr.write("usage: opprobe-xla-worker.py --parent=PID xla:cpu|iree:llvm-cpu [compile_timeout=SECONDS] "
                         "(started by opprobe)\n")
        return 64
    try:  # die with opprobe, as the pjrt worker does
        import ctypes
        LIBC = ctypes.CDLL(None)
        die_with_parent()
    except (OSError, AttributeError):
        LIBC = None
    if os.getppid() != int(argv[1][len("--parent="):]):
        return 0
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # opprobe decides when the worker ends
    target = argv[2]
    options = dict(a.split("=", 1) for a in argv[3:] if "=" in a)
    try:
        compile_timeout = float(options.get("compile_timeout", "")) or None
    except ValueError:
        compile_timeout = None
    if compile_timeout is not None and compile_timeout <= 0:
        compile_timeout = None
    if target not in ("xla:cpu", "iree:llvm-cpu"):
        write_message(struct.pack("<B", 0) + pack_str(
            "xla worker: unknown target '{}' (this worker serves xla:cpu and iree:llvm-cpu)".format(target)))
        return 0
    iree = target.startswith("iree:")
    try:
        import numpy as np
        import jax
        jax.config.update("jax_enable_x64", True)  # f64/s64 inputs must reach XLA as they are
        from jax._src.lib import _jax, xla_client
        dtypes, codes = numpy_types()
        if iree:
            import iree.compiler  # noqa: F401 - a missing IREE is named here, before anything else fails
            import iree.runtime  # noqa: F401
    except Exception as e:  # noqa: BLE001 - any import failure means the environment cannot be used
        what, requirements, spec = (("IREE", "requirements/xla.txt -r requirements/iree.txt", "iree:llvm-cpu")
                                    if iree else ("jaxlib", "requirements/xla.txt", "xla:cpu"))
        write_message(struct.pack("<B", 0) + pack_str(
            "{} backend: {} is not usable in {} ({}: {}); install it with: {} -m pip install -r {} (scripts/test "
            "creates this environment), or name another Python with OPPROBE_{}_PYTHON or {},python=PATH".format(
                spec.split(":")[0], what, sys.executable, type(e).__name__,
                str(e).splitlines()[0] if str(e) else "", sys.executable, requirements,
                spec.split(":")[0].upper(), spec)))
        return 0
    try:
        compiler = IreeLlvmCpu(jax, compile_timeout) if iree else XlaCpu(jax, xla_client)
    except Exception as e:  # noqa: BLE001
        write_message(struct.pack("<B", 0) + pack_str("{} backend: cannot start {}: {}".format(
            "iree" if iree else "xla", target, e)))
        return 0

    write_message(struct.pack("<B", 1) + struct.pack("<iiQ", 0, 0, 0) + pack_str(compiler.platform) +
                  pack_str(compiler.version) + struct.pack("<q", compiler.device_count))

    while True:
        request = read_message()
        if request is None:
            return 0
        try:
            r = Reader(request)
            flags = r.take("<B")
            execute = flags & 1
            proto = bytes(r.str())
            inputs = [r.array() for _ in range(r.take("<I"))]
            compile_options = bytes(r.str()) if flags & 2 else None
        except (ValueError, struct.error) as e:
            reply(STAGE_COMPILE, 13, "opprobe xla worker: malformed request: {}".format(e))
            continue
        try:
            module = _jax.mlir.hlo_to_stablehlo(proto)
        except Exception as e:  # noqa: BLE001 - XLA's own refusal, reported as it is
            code, msg = split_status(str(e))
            reply(STAGE_COMPILE, code, "HloModuleProto to StableHLO: " + msg)
            continue
        if compile_options is not None:
            try:
                stats = compiler.compile_program(module, compile_options)
            except CompileError as e:
                reply(STAGE_COMPILE, e.code, e.message)
                continue
            except Exception as e:  # noqa: BLE001
                code, msg = split_status(str(e))
                reply(STAGE_COMPILE, code, msg)
                continue
            reply(STAGE_OK, 0, "", stats=stats)
            continue
        try:
            exe = compiler.compile(module)
        except CompileError as e:
            reply(STAGE_COMPILE, e.code, e.message)
            continue
        except Exception as e:  # noqa: BLE001 - e.g. IREE's runtime refusing the module it compiled
            code, msg = split_status(str(e))
            reply(STAGE_COMPILE, code, msg)
            continue
        if not execute:
            reply(STAGE_OK, 0, "")
            continue
        try:
            host = []
            for t, dims, data in inputs:
                if t not in dtypes:
                    raise ValueError("unknown PJRT_Buffer_Type {}".format(t))
                host.append(np.frombuffer(data, dtype=dtypes[t]).reshape(dims))
            args = compiler.transfer(host)
        except Exception as e:  # noqa: BLE001
            code, msg = split_status(str(e))
            reply(STAGE_TRANSFER, code, msg)
            continue
        try:
            results = compiler.execute(exe, args)
            outputs = []
            for res in results:
                # tobytes() is row-major whatever the layout; ascontiguousarray would make 0-d arrays 1-d
                host = np.asarray(res)
                if host.dtype not in codes:
                    raise ValueError("output of element type {} cannot be read back".format(host.dtype))
                # A row-major view of the array's own bytes where it is one (XLA's CPU outputs are), else a copy.
                data = host.reshape(-1).view(np.uint8) if host.flags.c_contiguous and host.ndim else host.tobytes()
                outputs.append((codes[host.dtype], list(host.shape), data))
        except Exception as e:  # noqa: BLE001
            code, msg = split_status(str(e))
            reply(STAGE_EXECUTE, code, msg)
            continue
        reply(STAGE_OK, 0, "", outputs)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
