"""GET /openapi.json (no auth): the API description."""
from blackwidow.openapi import document


class OpenApiResource:
    auth_exempt = True

    def __init__(self):
        self._doc = document()

    def on_get(self, req, resp) -> None:
        resp.media = self._doc
