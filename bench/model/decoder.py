"""The benchmarks' decoders: sparse_opt.models (Llama- and GPT-2-style, with
or without a static KV cache), under the name the bench scripts import."""
from sparse_opt.models import *  # noqa: F401,F403
from sparse_opt.models import (GPT2_8B, LLAMA_8B, SMALL, SMALL_GPT2, Config, Decoder,  # noqa: F401
                               block_linear_names, init_weights, materialize, prune_linear)
