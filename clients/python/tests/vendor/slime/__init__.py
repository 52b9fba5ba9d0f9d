"""slime (github.com/THUDM/slime, Apache-2.0, LICENSE beside this file), not on PyPI (another project owns the name)
and its trainer needs Megatron and SGLang: slime/utils/{types,misc,data,ppo_utils}.py,
slime/observability/{rollout_data_utils,train_data_utils,timer}.py, slime/ray/rollout.py and the __init__.py files
of utils, observability and ray copied unchanged from commit 624b824a898ab0ec1fcb4d373004c7f3852bf515, so
test_import_slime.py runs slime's Sample, its reward normalisation and train-data conversion (RolloutManager), its
GRPO returns and its debug dump writers. slime/__init__.py is empty there; this docstring is TurnLens's."""
