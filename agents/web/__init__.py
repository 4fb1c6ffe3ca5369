"""Play and watch Zhuoji mahjong against the agents in a browser: ``python -m agents.web``.

A local web application (the ``web`` extra): a lobby to set up tables, a table seen from your
seat with the legal actions as buttons and an agent's hints, watched tables of agents, the
settlement ledger and each hand's record to download. :mod:`agents.web.table` holds a table's
game and what each viewer may see, :mod:`agents.web.app` the Starlette application that serves
it, :mod:`agents.web.bench` the load benchmark. docs/web.md is the guide.
"""
