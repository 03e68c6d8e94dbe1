"""Where each launcher puts a process's rank, local rank and world size (torchrun, Open MPI,
MPICH/PMI, Slurm), and the one way to read them."""

RANK_VARS = ("RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID")
LOCAL_RANK_VARS = ("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID")
WORLD_SIZE_VARS = ("WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS")


def first_var(env, names):
    """The first of names set to a number in env, as an int, or None."""
    for name in names:
        value = (env or {}).get(name, "")
        if value.isdigit():
            return int(value)
    return None
