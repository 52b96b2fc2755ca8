# GoogleTest executables of the C++ utilities and the runtime, run by lit so
# their cases count in the suite's summary.
import os

import lit.formats

config.name = "SparseOpt-Unit"
config.suffixes = []
config.test_source_root = os.path.join(config.sparseopt_obj_root, "test", "Unit")
config.test_exec_root = config.test_source_root
config.test_format = lit.formats.GoogleTest(".", "Tests")
