"""ragen/Sokoban-v0's OpenEnv server. Generated from the env registry by `python -m ragen_envs.serve.manifest`: do not edit."""
