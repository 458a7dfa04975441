"""WebShop-style shopping env (``ragen/WebShop-v0``): catalogue, tasks, search, pages, reward, server.

Nothing is imported here, so ``import ragen_envs`` stays light; see :mod:`ragen_envs.webshop.env` for the manual.
"""
