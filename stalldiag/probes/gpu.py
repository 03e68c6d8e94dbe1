"""GPU state through NVML (package nvidia-ml-py, module pynvml).

Without a driver or a GPU the probe reports why and the rest of the
inspection carries on.  What it samples over the window:

- per device: utilization (the share of time *any* kernel ran: a single
  spinning kernel reads 100%), memory, SM clock, power, clock-event
  (throttle) reasons, ECC error counts, Xid events, MIG mode;
- on Hopper and newer, GPM metrics between consecutive samples: SM
  utilization (share of SMs busy), SM occupancy and tensor activity, which
  tell real compute from a spinning or hung kernel;
- per process: GPU memory (compute processes v3, then older calls) and
  utilization samples (NOT_FOUND there means "no samples", not an error).

NVML names host PIDs.  The pids we inspect are in our own PID namespace;
``host_pid_of`` maps them through NSpid so that a container sees its GPUs.

NVML is opened once per run (``NVML``, shared by target discovery, `watch` and this
probe) and shut down once, when stalldiag exits.
"""
import atexit
import os
import threading
import time
from dataclasses import field

from ..records import typed_record
from .. import procfs
from .base import Probe, Section

GPM_METRICS = {
    "sm_util": 2,          # NVML_GPM_METRIC_SM_UTIL: % of SMs busy
    "sm_occupancy": 3,     # NVML_GPM_METRIC_SM_OCCUPANCY: % of warps resident vs max
    "tensor_util": 5,      # NVML_GPM_METRIC_ANY_TENSOR_UTIL: % of time tensor cores active
    "graphics_util": 1,    # NVML_GPM_METRIC_GRAPHICS_UTIL: % time any engine active
}

PCIE_EVERY = 2     # PCIe throughput on every second sample (each read waits 20 ms)
XID_EVENT = 0x8  # nvmlEventTypeXidCriticalError
# Where a loaded NVIDIA driver shows (a container gets them from the NVIDIA runtime; WSL2
# has /dev/dxg): with none of them NVML cannot work, and is not loaded.
DRIVER_PATHS = (procfs.host_path("driver/nvidia"), "/dev/nvidiactl", "/dev/dxg")


class Nvml:
    """NVML for one run of stalldiag: nvmlInit on first use, nvmlShutdown once at exit (or at
    close()).  open() gives the initialised pynvml module, or None with `reason` saying why
    (no driver, no nvidia-ml-py, NVML failing): whoever asks next gets the same answer."""

    def __init__(self):
        self.module = None
        self.reason = None
        self._opened = False
        self._lock = threading.Lock()

    def open(self):
        with self._lock:
            if not self._opened:
                self._opened = True
                self.module, self.reason = self._init()
            return self.module

    def _init(self):
        if not any(os.path.exists(p) for p in DRIVER_PATHS):
            # Importing pynvml and failing to load libnvidia-ml costs ~15 ms of CPU.
            return None, "no NVIDIA driver on this host (none of %s)" % ", ".join(DRIVER_PATHS)
        try:
            import pynvml  # from nvidia-ml-py
        except ImportError:
            return None, "nvidia-ml-py (pynvml) is not installed"
        try:
            pynvml.nvmlInit()
        except Exception as exc:  # NVMLError_LibraryNotFound, DriverNotLoaded, ...
            return None, "NVML unavailable: %s" % (exc,)
        atexit.register(self.close)
        return pynvml, None

    def close(self):
        """Shut NVML down (once); a later open() initialises it again."""
        with self._lock:
            if self.module is not None:
                _try(self.module.nvmlShutdown)
                atexit.unregister(self.close)
            self.module, self.reason, self._opened = None, None, False


NVML = Nvml()   # the run's NVML session


def _text(value):
    return value.decode(errors="replace") if isinstance(value, bytes) else value


def _try(fn, *args, default=None):
    try:
        return fn(*args)
    except Exception:
        return default


@typed_record
class GpuSection(Section):
    """capture["gpu"]: NVML's devices, samples and per-process use (or why there are none)."""
    gpu: dict = field(default_factory=lambda: {"available": False, "reason": "not measured"})

    @property
    def processes(self):
        """Host pids of every process NVML saw on a GPU, in the job or not."""
        return [int(pid) for pid in self.gpu.get("processes") or {}]


class GpuProbe(Probe):
    """Samples devices and per-process use over the window, in its own thread."""

    name = "gpu"
    Section = GpuSection

    def __init__(self, interval=0.5, nvml=None):
        self.interval = interval
        self.nvml = nvml or NVML
        self.available = False
        self.reason = None
        self.devices = []
        self.samples = []      # [t, device, gpu util %, mem util %, mem used, sm clock MHz, power W, reasons mask]
        self.gpm = []          # [t, device, sm_util, sm_occupancy, tensor_util, graphics_util]
        self.gpm_note = None
        self.processes = {}    # host pid -> {"devices": {index: used bytes}}
        self.process_util = {}  # host pid -> [[t, device, sm %, mem %], ...]
        self.xid_events = []
        self.pcie = []         # [t, device, host->device KB/s, device->host KB/s]
        self._samples_taken = 0
        self.notes = []
        self._handles = []
        self._gpm_prev = {}
        self._last_ts = {}
        self._event_set = None
        self._ecc_start = {}
        self._stop = threading.Event()
        self._thread = None
        self._t0 = None

    # --- lifecycle -----------------------------------------------------------------

    def start(self, ctx):
        self._t0 = ctx.t0
        nvml = self.nvml.open()
        if nvml is None:
            self.reason = self.nvml.reason
            return False
        try:
            count = nvml.nvmlDeviceGetCount()
        except Exception as exc:
            self.reason = "NVML unavailable: %s" % (exc,)
            return False
        if count == 0:
            self.reason = "NVML reports no GPU"
            return False
        self.available = True
        self.driver = _text(_try(nvml.nvmlSystemGetDriverVersion, default=""))
        for index in range(count):
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
            self._handles.append(handle)
            self.devices.append(self._describe(nvml, index, handle))
        self._start_gpm(nvml)
        self._start_xid_events(nvml)
        self._thread = threading.Thread(target=self._run, name="stalldiag-gpu", daemon=True)
        self._thread.start()
        return True

    def _describe(self, nvml, index, handle):
        mem = nvml.nvmlDeviceGetMemoryInfo(handle)
        mig = _try(nvml.nvmlDeviceGetMigMode, handle)
        ecc = _try(nvml.nvmlDeviceGetTotalEccErrors, handle, 1, 0)  # uncorrected, volatile
        self._ecc_start[index] = ecc
        arch = _try(nvml.nvmlDeviceGetArchitecture, handle)
        return {
            "index": index,
            "name": _text(nvml.nvmlDeviceGetName(handle)),
            "uuid": _text(nvml.nvmlDeviceGetUUID(handle)),
            "pci_bus_id": _text(getattr(_try(nvml.nvmlDeviceGetPciInfo, handle), "busId", b"")),
            "memory_total": mem.total,
            "mig_mode": None if mig is None else bool(mig[0]),
            # /dev/nvidiaN: a process holding that file uses this GPU, whatever PID namespace it is in
            "minor_number": _try(nvml.nvmlDeviceGetMinorNumber, handle),
            "architecture": arch,
            "ecc_uncorrected_start": ecc,
        }

    def _start_gpm(self, nvml):
        if not hasattr(nvml, "nvmlGpmQueryDeviceSupport"):
            self.gpm_note = "GPM unsupported by this nvidia-ml-py"
            return
        supported = 0
        for index, handle in enumerate(self._handles):
            support = _try(nvml.nvmlGpmQueryDeviceSupport, handle)
            if support is not None and support.isSupportedDevice:
                supported += 1
                self._gpm_prev[index] = None
        if not supported:
            self.gpm_note = "GPM unsupported on these GPUs (needs Hopper or newer): SM activity not measured"

    def _start_xid_events(self, nvml):
        try:
            self._event_set = nvml.nvmlEventSetCreate()
            for handle in self._handles:
                _try(nvml.nvmlDeviceRegisterEvents, handle, XID_EVENT, self._event_set)
        except Exception:
            self._event_set = None
            self.notes.append("Xid events not available")

    def _run(self):
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval)

    def stop(self, ctx):
        self._end()
        return GpuSection(limitations=[] if self.available else ["GPU: not available (%s)" % self.reason],
                          gpu=self.to_dict())

    def failed(self, error):
        reason = "the probe failed: %s" % error
        return GpuSection(limitations=["GPU: not available (%s)" % reason], gpu={"available": False, "reason": reason})

    def _end(self):
        self._stop.set()
        if self._thread:
            self._thread.join(5)
        if not self.available:
            return
        nvml = self.nvml.module
        for index, handle in enumerate(self._handles):
            ecc = _try(nvml.nvmlDeviceGetTotalEccErrors, handle, 1, 0)
            self.devices[index]["ecc_uncorrected_end"] = ecc
        for sample in self._gpm_prev.values():
            if sample is not None:
                _try(nvml.nvmlGpmSampleFree, sample)
        if self._event_set is not None:
            _try(nvml.nvmlEventSetFree, self._event_set)

    # --- sampling ------------------------------------------------------------------

    def now(self):
        return round(time.monotonic() - self._t0, 3)

    def sample(self):
        nvml = self.nvml.module
        t = self.now()
        for index, handle in enumerate(self._handles):
            util = _try(nvml.nvmlDeviceGetUtilizationRates, handle)
            mem = _try(nvml.nvmlDeviceGetMemoryInfo, handle)
            if util is None or mem is None:
                continue
            clock = _try(nvml.nvmlDeviceGetClockInfo, handle, 1)  # NVML_CLOCK_SM
            power = _try(nvml.nvmlDeviceGetPowerUsage, handle)
            reasons = _try(getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
                           or nvml.nvmlDeviceGetCurrentClocksThrottleReasons, handle)
            self.samples.append([t, index, util.gpu, util.memory, mem.used, clock,
                                 None if power is None else round(power / 1000.0, 1), reasons])
            for proc in self._running_processes(nvml, handle):
                entry = self.processes.setdefault(proc.pid, {"devices": {}})
                entry["devices"][str(index)] = proc.usedGpuMemory
            self._sample_process_util(nvml, index, handle, t)
            if self._samples_taken % PCIE_EVERY == 0:
                self._sample_pcie(nvml, index, handle, t)
            if index in self._gpm_prev:
                self._sample_gpm(nvml, index, handle, t)
        self._poll_xid(nvml, t)
        self._samples_taken += 1

    def _sample_pcie(self, nvml, index, handle, t):
        """PCIe throughput over the driver's last 20 ms (each call waits that long: read every
        PCIE_EVERY samples).  RX is what the device receives: host-to-device copies."""
        rx = _try(nvml.nvmlDeviceGetPcieThroughput, handle, getattr(nvml, "NVML_PCIE_UTIL_RX_BYTES", 1))
        tx = _try(nvml.nvmlDeviceGetPcieThroughput, handle, getattr(nvml, "NVML_PCIE_UTIL_TX_BYTES", 0))
        if rx is not None or tx is not None:
            self.pcie.append([t, index, rx, tx])

    @staticmethod
    def _running_processes(nvml, handle):
        for getter in ("nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2",
                       "nvmlDeviceGetComputeRunningProcesses"):
            fn = getattr(nvml, getter, None)
            if fn is None:
                continue
            try:
                return fn(handle)
            except Exception:
                continue
        return []

    def _sample_process_util(self, nvml, index, handle, t):
        last = self._last_ts.get(index, 0)
        try:
            samples = nvml.nvmlDeviceGetProcessUtilization(handle, last)
        except Exception:
            return  # NOT_FOUND: no samples since `last`; other errors: not supported
        for s in samples:
            self._last_ts[index] = max(self._last_ts.get(index, 0), s.timeStamp)  # microseconds
            self.process_util.setdefault(s.pid, []).append([t, index, s.smUtil, s.memUtil])

    def _sample_gpm(self, nvml, index, handle, t):
        try:
            current = nvml.nvmlGpmSampleAlloc()
            nvml.nvmlGpmSampleGet(handle, current)
        except Exception as exc:
            self.gpm_note = "GPM sampling failed: %s" % exc
            self._gpm_prev.pop(index, None)
            return
        previous = self._gpm_prev[index]
        self._gpm_prev[index] = current
        if previous is None:
            return
        try:
            request = nvml.c_nvmlGpmMetricsGet_t()
            request.version = nvml.NVML_GPM_METRICS_GET_VERSION
            request.numMetrics = len(GPM_METRICS)
            request.sample1 = previous
            request.sample2 = current
            for slot, metric_id in enumerate(GPM_METRICS.values()):
                request.metrics[slot].metricId = metric_id
            nvml.nvmlGpmMetricsGet(request)
            values = [round(request.metrics[slot].value, 2) if request.metrics[slot].nvmlReturn == 0 else None
                      for slot in range(len(GPM_METRICS))]
            self.gpm.append([t, index] + values)
        except Exception as exc:
            self.gpm_note = "GPM metrics failed: %s" % exc
        finally:
            _try(nvml.nvmlGpmSampleFree, previous)

    def _poll_xid(self, nvml, t):
        if self._event_set is None:
            return
        while True:
            try:
                event = nvml.nvmlEventSetWait(self._event_set, 0)
            except Exception:
                return  # TIMEOUT: no event pending
            self.xid_events.append({"t": t, "xid": int(event.eventData),
                                    "device": _text(_try(nvml.nvmlDeviceGetUUID, event.device, default=""))})

    def to_dict(self):
        return {
            "available": self.available,
            "reason": self.reason,
            "driver": getattr(self, "driver", None),
            "devices": self.devices,
            # [t, device, util %, mem util %, mem used B, SM MHz, power W, clock-event mask]
            "samples": self.samples,
            # [t, device, sm_util %, sm_occupancy %, tensor_util %, graphics_util %]
            "gpm": self.gpm,
            "gpm_note": self.gpm_note,
            "processes": {str(pid): info for pid, info in self.processes.items()},
            "process_util": {str(pid): s for pid, s in self.process_util.items()},
            "xid_events": self.xid_events,
            # [t, device, host-to-device KB/s, device-to-host KB/s]
            "pcie": self.pcie,
            "notes": self.notes,
        }


def host_pid_of(nspid_list):
    """The host PID of a process from its NSpid list (outermost namespace first)."""
    return nspid_list[0] if nspid_list else None
