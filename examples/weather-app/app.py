"""Weather service: the demo app that Teal builds and releases blue/green.

GET /weather?city=NAME answers with the current weather of a city, from
OpenWeatherMap when WEATHER_API_KEY is set, else from sample_data.json.
GET /healthz is for the readiness and liveness probes.

Standard library only, so the image needs nothing but python.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from functools import partial
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.error import HTTPError
from urllib.parse import parse_qs, quote, urlencode, urlsplit
from urllib.request import Request, urlopen

FIELDS = (
    "city",
    "country",
    "temperature",
    "temp_min",
    "temp_max",
    "pressure",
    "humidity",
    "feels_like",
    "description",
)
SAMPLE_FILE = Path(__file__).with_name("sample_data.json")
DEFAULT_API_URL = "https://api.openweathermap.org"
API_TIMEOUT_SECONDS = 5.0

Json = dict[str, object]


class WeatherError(Exception):
    """A failure to report to the client as a JSON error with this status."""

    def __init__(self, status: HTTPStatus, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def log(line: str) -> None:
    # One write per line, so lines from concurrent requests do not interleave.
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def load_samples(path: Path) -> dict[str, Json]:
    """Sample weather by lower-case city name; fails at startup on a bad file."""
    data = json.loads(path.read_text(encoding="utf-8"))
    samples: dict[str, Json] = {}
    for name, entry in data.items():
        missing = [f for f in FIELDS if f not in entry]
        if missing:
            raise ValueError(f"{path.name}: {name!r} lacks {', '.join(missing)}")
        samples[name.lower()] = {f: entry[f] for f in FIELDS}
    return samples


def sample_weather(samples: dict[str, Json], city: str) -> Json:
    entry = samples.get(city.lower())
    if entry is None:
        known = ", ".join(sorted(samples))
        raise WeatherError(HTTPStatus.NOT_FOUND, f"no sample data for {city!r}; try one of: {known}")
    return {**entry, "source": "sample"}


def api_weather(base_url: str, key: str, city: str) -> Json:
    """Current weather from OpenWeatherMap.

    The request URL carries the key (appid), so neither it nor any exception
    text that might quote it reaches a log line or a response.
    """
    query = urlencode({"q": city, "appid": key, "units": "metric"}, quote_via=quote)
    request = Request(f"{base_url.rstrip('/')}/data/2.5/weather?{query}", headers={"Accept": "application/json"})
    try:
        with urlopen(request, timeout=API_TIMEOUT_SECONDS) as response:
            body = json.load(response)
    except HTTPError as err:
        err.close()
        if err.code == HTTPStatus.NOT_FOUND:
            raise WeatherError(HTTPStatus.NOT_FOUND, f"city {city!r} not found") from None
        log(f"weather API answered HTTP {err.code}")
        raise WeatherError(HTTPStatus.BAD_GATEWAY, f"weather API answered HTTP {err.code}") from None
    except (OSError, http.client.HTTPException, ValueError) as err:
        # URLError, timeouts, dropped connections and bad JSON alike.
        log(f"weather API failed: {type(err).__name__}")
        raise WeatherError(HTTPStatus.BAD_GATEWAY, "weather API unreachable or gave a bad answer") from None
    try:
        main = body["main"]
        return {
            "city": body["name"],
            "country": body["sys"]["country"],
            "temperature": main["temp"],
            "temp_min": main["temp_min"],
            "temp_max": main["temp_max"],
            "pressure": main["pressure"],
            "humidity": main["humidity"],
            "feels_like": main["feels_like"],
            "description": body["weather"][0]["description"],
            "source": "openweathermap",
        }
    except (KeyError, IndexError, TypeError):
        log("weather API answer lacks expected fields")
        raise WeatherError(HTTPStatus.BAD_GATEWAY, "weather API gave an unexpected answer") from None


def make_handler(lookup: Callable[[str], Json], version: str | None) -> type[BaseHTTPRequestHandler]:
    health: Json = {"status": "ok", **({"version": version} if version else {})}

    class Handler(BaseHTTPRequestHandler):
        # Seconds a client may stay silent: shutdown waits for open connections.
        timeout = 10

        def do_GET(self) -> None:
            self.serve()

        def do_HEAD(self) -> None:
            self.serve()

        def __getattr__(self, name: str) -> Callable[[], None]:
            # Any other method: 405 from serve(), rather than http.server's 501.
            if name.startswith("do_"):
                return self.serve
            raise AttributeError(name)

        def serve(self) -> None:
            started = time.monotonic()
            url = urlsplit(self.path)
            status, body = self.route(url.path, url.query)
            payload = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(payload)))
            if status == HTTPStatus.METHOD_NOT_ALLOWED:
                self.send_header("Allow", "GET, HEAD")
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(payload)
            # The path only: a query string is the client's business.
            log(f"{self.command} {url.path} {status} {(time.monotonic() - started) * 1000:.1f}ms")

        def route(self, path: str, query: str) -> tuple[int, Json]:
            if path not in ("/weather", "/healthz"):
                return HTTPStatus.NOT_FOUND, {"error": f"no such path {path!r}; try /weather?city=seoul"}
            if self.command not in ("GET", "HEAD"):
                return HTTPStatus.METHOD_NOT_ALLOWED, {"error": f"method {self.command} not allowed; use GET"}
            if path == "/healthz":
                return HTTPStatus.OK, health
            # Trimmed, with inner runs of spaces collapsed: " new  york " is "new york".
            city = " ".join(parse_qs(query).get("city", [""])[0].split())
            if not city:
                return HTTPStatus.BAD_REQUEST, {"error": "the city parameter is required, e.g. /weather?city=seoul"}
            try:
                return HTTPStatus.OK, lookup(city)
            except WeatherError as err:
                return err.status, {"error": err.message}

        def log_message(self, format: str, *args: object) -> None:
            # http.server would log the full request line, query string included; serve() logs instead.
            pass

    return Handler


def main() -> None:
    key = os.environ.get("WEATHER_API_KEY", "").strip()
    if key:
        base_url = os.environ.get("WEATHER_API_URL") or DEFAULT_API_URL
        lookup: Callable[[str], Json] = partial(api_weather, base_url, key)
        log(f"weather from {base_url}")
    else:
        samples = load_samples(SAMPLE_FILE)
        lookup = partial(sample_weather, samples)
        log(f"WEATHER_API_KEY is not set: serving sample data for {len(samples)} cities")

    host = os.environ.get("HOST", "0.0.0.0")
    port = int(os.environ.get("PORT", "8080"))  # 0 picks a free port, for tests
    version = os.environ.get("VERSION") or os.environ.get("APP_VERSION")
    server = ThreadingHTTPServer((host, port), make_handler(lookup, version))
    # Let requests in flight finish when the server closes.
    server.daemon_threads = False

    # Kubernetes stops a pod with SIGTERM. shutdown() waits for serve_forever()
    # to return, so it must not run on the main thread, which is serving.
    def stop(_signum: int, _frame: object) -> None:
        threading.Thread(target=server.shutdown).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)

    log(f"listening on {host}:{server.server_address[1]}")
    try:
        server.serve_forever()
    finally:
        server.server_close()
    log("stopped")


if __name__ == "__main__":
    main()
