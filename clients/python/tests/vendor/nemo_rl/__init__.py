"""NeMo-RL (github.com/NVIDIA-NeMo/RL, Apache-2.0, LICENSE beside this file), whose PyPI package is a placeholder and
whose trainer needs CUDA: nemo_rl/utils/logger.py, nemo_rl/distributed/{batched_data_dict,collectives}.py,
nemo_rl/data/{interfaces,llm_message_utils}.py, nemo_rl/algorithms/{utils,advantage_estimator}.py and the
license-header-only __init__.py files of utils, distributed, algorithms and data copied unchanged from commit
7ea279abfbeb698b092856d0dab61e7cf39bc909, so test_import_nemo_rl.py runs NeMo-RL's own flattening, GRPO advantage and
Logger.log_batched_dict_as_jsonl. This file replaces nemo_rl/__init__.py (which puts Megatron-LM on the path)."""
