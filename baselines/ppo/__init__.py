"""Reference PPO/GRPO learner with SNR-aware (reward-variance) filtering; see docs/learner.md."""
