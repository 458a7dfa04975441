"""Reference agents and the reference PPO/GRPO learner with SNR-aware filtering."""
