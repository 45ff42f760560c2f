"""The dashboard: read-only pages over one account's data, and the JSON API they read.

``create_app(journal, archive)`` is a Flask app: HTML pages (``templates/``), our own JS
and CSS (``static/``), plotly.js from the installed plotly package
(``/static/vendor/plotly.min.js``, never a CDN) and the read API under ``/api/``
(docs/dashboard.md lists every endpoint). Every page is drawn by its JS from the API.

Served by ``healthlog dashboard`` and, as a third child, by ``healthlog serve``
(``healthlog.dashboard.server``). On 127.0.0.1 it shows the one account (or the one
``--account`` names, or the one picked in the selector); bound anywhere else, or with
``require_sign_in``, it asks for an account's token and shows only that account.
Every response carries a Content-Security-Policy that allows only the dashboard itself.
"""

from __future__ import annotations

from healthlog.dashboard.app import DashboardOptions, create_app

__all__ = ["DashboardOptions", "create_app"]
