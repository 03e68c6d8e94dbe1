"""NVML's clock event reasons: why a GPU's clocks are held down (nvmlClocksEventReason*)."""

CLOCK_EVENT_REASONS = {
    0x1: "gpu_idle", 0x2: "applications_clocks_setting", 0x4: "sw_power_cap",
    0x8: "hw_slowdown", 0x10: "sync_boost", 0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown", 0x80: "hw_power_brake_slowdown", 0x100: "display_clock_setting",
}


def reasons_text(mask):
    return [name for bit, name in CLOCK_EVENT_REASONS.items() if mask and mask & bit]
