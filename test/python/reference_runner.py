"""The tests' name for sparse_opt.reference (the CPU reference backend)."""
from sparse_opt.reference import *  # noqa: F401,F403
from sparse_opt.reference import arguments, param_names, run_reference  # noqa: F401
