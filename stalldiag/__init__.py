"""stalldiag: why has a training run stopped making visible progress?"""
__version__ = "0.1.0"
