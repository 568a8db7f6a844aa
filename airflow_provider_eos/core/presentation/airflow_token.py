"""The signed-in user's Airflow token for the view's pages, where Airflow 3.1 does not send it as a cookie.

Airflow 3.2 and later authenticate the UI's requests by the ``_token`` cookie, so a page in the
plugin's frame, and a ``fetch`` from it, carry the user as they are. Airflow 3.1's API reads only
the ``Authorization`` header: its UI moves the token from the login's cookie into the browser's
local storage (key ``token``) and deletes the cookie. A page load cannot carry a header, so a page
request without one is answered by :func:`render_token_relay` (HTTP 401), which asks for the same
page again with the stored token and shows the answer; :data:`AUTH_FETCH` retries a refused
``fetch`` the same way. Airflow decides with the token either way: nothing here grants access.
"""

from __future__ import annotations

__all__ = ["AUTH_FETCH", "TOKEN_KEY", "render_token_relay"]

#: Where Airflow 3.1's UI keeps the user's token (``localStorage``; the same origin as the frame).
TOKEN_KEY = "token"

#: Script: ``eosFetch(url, options)`` is ``fetch`` with the user's cookie, retried with Airflow 3.1's
#: stored token as a bearer header when the cookie alone gets HTTP 401 (so 3.2+ never sends it).
AUTH_FETCH = f"""
function eosStoredToken() {{
  try {{ return localStorage.getItem('{TOKEN_KEY}'); }} catch (error) {{ return null; }}
}}
async function eosFetch(url, options) {{
  const response = await fetch(url, {{...options, credentials: 'same-origin'}});
  const token = response.status === 401 ? eosStoredToken() : null;
  if (!token) return response;
  return fetch(url, {{...options, credentials: 'same-origin',
                      headers: {{...(options.headers || {{}}), Authorization: 'Bearer ' + token}}}});
}}
"""

_RELAY = """
(async () => {
  const note = document.getElementById('note');
  const response = await eosFetch(location.href, {});
  if (!response.ok) {
    note.textContent = response.status === 401 ? 'Sign in to Airflow to see this page.'
      : `Airflow refused this page (HTTP ${response.status}).`;
    return;
  }
  const page = await response.text();
  document.open();
  document.write(page);
  document.close();
})();
"""


def render_token_relay() -> str:
    """The page a request without the user's cookie or header gets: it loads the page it stands for
    with Airflow 3.1's stored token, or says to sign in."""
    return ("<!doctype html><html lang=en><head><meta charset=utf-8><title>Exactly-once pipelines</title></head>"
            '<body style="font-family:system-ui,sans-serif;font-size:14px;margin:16px">'
            '<p id="note">Loading...</p>'
            f"<script>{AUTH_FETCH}{_RELAY}</script></body></html>")
