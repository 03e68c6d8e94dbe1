"""GPU state through NVML (package nvidia-ml-py, module pynvml).

Without a driver or a GPU the probe reports why and the rest of the
inspection carries on.  NVML reports host PIDs; a process inside a PID
namespace is matched by the NSpid line of /proc/PID/status.
"""
import threading
import time


def _nvml():
    import pynvml  # from nvidia-ml-py
    return pynvml


def _text(value):
    return value.decode() if isinstance(value, bytes) else value


class GpuProbe:
    """Samples per-device utilization and per-process GPU memory over the window."""

    def __init__(self, interval=0.5):
        self.interval = interval
        self.available = False
        self.reason = None
        self.devices = []
        self.samples = []      # [t, device index, gpu util %, mem util %, mem used bytes]
        self.processes = {}    # host pid -> {"device": i, "used_memory": bytes}
        self._handles = []
        self._stop = threading.Event()
        self._thread = None
        self._t0 = None

    def start(self, t0):
        self._t0 = t0
        try:
            nvml = _nvml()
        except ImportError:
            self.reason = "nvidia-ml-py (pynvml) is not installed"
            return False
        try:
            nvml.nvmlInit()
            count = nvml.nvmlDeviceGetCount()
        except Exception as exc:  # NVMLError_LibraryNotFound, DriverNotLoaded, ...
            self.reason = "NVML unavailable: %s" % (exc,)
            return False
        if count == 0:
            self.reason = "NVML reports no GPU"
            nvml.nvmlShutdown()
            return False
        self.available = True
        for index in range(count):
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
            self._handles.append(handle)
            mem = nvml.nvmlDeviceGetMemoryInfo(handle)
            self.devices.append({
                "index": index,
                "name": _text(nvml.nvmlDeviceGetName(handle)),
                "uuid": _text(nvml.nvmlDeviceGetUUID(handle)),
                "memory_total": mem.total,
            })
        self._thread = threading.Thread(target=self._run, name="stalldiag-gpu", daemon=True)
        self._thread.start()
        return True

    def _run(self):
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval)

    def sample(self):
        nvml = _nvml()
        t = round(time.monotonic() - self._t0, 3)
        for index, handle in enumerate(self._handles):
            try:
                util = nvml.nvmlDeviceGetUtilizationRates(handle)
                mem = nvml.nvmlDeviceGetMemoryInfo(handle)
                self.samples.append([t, index, util.gpu, util.memory, mem.used])
            except Exception:
                continue
            for proc in self._running_processes(nvml, handle):
                self.processes[proc.pid] = {"device": index, "used_memory": proc.usedGpuMemory}

    @staticmethod
    def _running_processes(nvml, handle):
        for getter in ("nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses"):
            fn = getattr(nvml, getter, None)
            if fn is None:
                continue
            try:
                return fn(handle)
            except Exception:
                continue
        return []

    def stop(self):
        self._stop.set()
        if self._thread:
            self._thread.join(2)
        if self.available:
            try:
                _nvml().nvmlShutdown()
            except Exception:
                pass

    def to_dict(self):
        return {
            "available": self.available,
            "reason": self.reason,
            "devices": self.devices,
            "samples": self.samples,
            "processes": {str(pid): info for pid, info in self.processes.items()},
        }
