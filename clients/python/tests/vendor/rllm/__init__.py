"""rLLM (github.com/rllm-org/rllm, Apache-2.0), not on PyPI: rllm/types.py and rllm/utils/episode_logger.py copied
unchanged from commit 9beb6e0f676a46d38858991fd79ac5f8e0b16d4c, so test_import_rllm.py runs its EpisodeLogger."""
