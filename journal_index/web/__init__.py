"""``journal-index serve``: a local, read-only web view over the service layer (the ``web`` extra).

``security`` guards every request (Host, method, token and cookie), ``app`` holds the routes,
``views`` turns the service's answers into what the templates show, ``server`` binds and runs
uvicorn. Templates and assets live beside them and ship in the wheel: no CDN, no network.
"""
