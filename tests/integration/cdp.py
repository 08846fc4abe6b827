"""A small Chrome DevTools Protocol client for the console's browser tests: launches Debian's
Chromium headless with --remote-debugging-pipe (JSON messages on fds 3 and 4, so no websocket
library is needed) and drives one page. Collects page errors, console errors and failed loads
(CSP violations and 4xx/5xx answers show up there) so a test can assert there were none."""

import base64
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time


def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


class CdpError(Exception):
    pass


class Browser:
    def __init__(self, width=1280, height=900):
        exe = find_chromium()
        if exe is None:
            raise CdpError("chromium is not installed (scripts/install-deps.sh installs it)")
        self.profile = tempfile.mkdtemp(prefix="ty-chromium-")
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()
        # Chromium reads commands on fd 3 and writes answers on fd 4.
        hi_r, hi_w = 200, 201
        os.dup2(to_child_r, hi_r)
        os.dup2(from_child_w, hi_w)
        os.close(to_child_r)
        os.close(from_child_w)

        def child_fds():
            os.dup2(hi_r, 3)
            os.dup2(hi_w, 4)

        args = [exe, "--headless=new", "--remote-debugging-pipe", "--no-first-run",
                "--no-default-browser-check", "--disable-gpu", "--disable-extensions",
                "--disable-background-networking", "--disable-sync", "--mute-audio",
                "--user-data-dir=" + self.profile, "--window-size=%d,%d" % (width, height)]
        if os.geteuid() == 0:
            args.append("--no-sandbox")
        self.proc = subprocess.Popen(args + ["about:blank"], preexec_fn=child_fds,
                                     pass_fds=(3, 4), stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, start_new_session=True)
        os.close(hi_r)
        os.close(hi_w)
        self._next_id = 0
        self._lock = threading.Lock()
        self._pending = {}
        self._events = []
        self._cv = threading.Condition()
        self._reader = threading.Thread(target=self._read_loop, daemon=True)
        self._reader.start()
        self.errors = []
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget",
                                 {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(domain + ".enable")

    # --- transport -------------------------------------------------------------------------
    def _read_loop(self):
        buf = b""
        while True:
            try:
                chunk = os.read(self._from_child, 1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                with self._cv:
                    self._cv.notify_all()
                return
            buf += chunk
            while b"\0" in buf:
                raw, buf = buf.split(b"\0", 1)
                msg = json.loads(raw)
                with self._cv:
                    if "id" in msg:
                        self._pending[msg["id"]] = msg
                    else:
                        self._on_event(msg)
                    self._cv.notify_all()

    def _on_event(self, msg):
        method, p = msg.get("method"), msg.get("params", {})
        if method == "Runtime.exceptionThrown":
            d = p.get("exceptionDetails", {})
            self.errors.append("exception: %s" % (d.get("exception", {}).get("description")
                                                  or d.get("text")))
        elif method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            self.errors.append("console.%s: %s" % (p["type"], " ".join(
                str(a.get("value", a.get("description", ""))) for a in p.get("args", []))))
        elif method == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
            e = p["entry"]
            self.errors.append("log: %s %s" % (e.get("text"), e.get("url", "")))
        elif method == "Network.responseReceived":
            r = p.get("response", {})
            if r.get("status", 0) >= 400:
                self.errors.append("HTTP %s %s" % (r.get("status"), r.get("url")))
        self._events.append(msg)

    def call(self, method, params=None, session=None, timeout=30):
        with self._lock:
            self._next_id += 1
            mid = self._next_id
        msg = {"id": mid, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._to_child, json.dumps(msg).encode() + b"\0")
        deadline = time.time() + timeout
        with self._cv:
            while mid not in self._pending:
                left = deadline - time.time()
                if left <= 0 or self.proc.poll() is not None:
                    raise CdpError("no answer to %s" % method)
                self._cv.wait(left)
            reply = self._pending.pop(mid)
        if "error" in reply:
            raise CdpError("%s: %s" % (method, reply["error"]))
        return reply.get("result", {})

    def send(self, method, params=None, timeout=30):
        return self.call(method, params, session=self.session, timeout=timeout)

    # --- page helpers ----------------------------------------------------------------------
    def goto(self, url, timeout=30):
        self.send("Page.navigate", {"url": url})
        self.wait("document.readyState === 'complete'", timeout=timeout, what="load of " + url)

    def eval(self, expr):
        r = self.send("Runtime.evaluate", {"expression": expr, "returnByValue": True,
                                           "awaitPromise": True})
        if "exceptionDetails" in r:
            raise CdpError("evaluating %s: %s" % (expr, r["exceptionDetails"].get(
                "exception", {}).get("description", r["exceptionDetails"].get("text"))))
        return r.get("result", {}).get("value")

    def wait(self, expr, timeout=20, what=None, interval=0.05):
        """Evaluates `expr` until it is truthy; returns its value."""
        deadline = time.time() + timeout
        last = None
        # An element is not serializable by value: it counts as true.
        wrapped = "(() => { const v = (%s); return v instanceof Node ? true : v; })()" % expr
        while time.time() < deadline:
            try:
                last = self.eval(wrapped)
                if last:
                    return last
            except CdpError as e:
                last = "error: %s" % e
            time.sleep(interval)
        raise AssertionError("timed out after %ss waiting for %s (last: %r)" % (
            timeout, what or expr, last))

    def click(self, selector):
        ok = self.eval("(() => { const e = document.querySelector(%s); if (!e) return false; "
                       "e.click(); return true; })()" % json.dumps(selector))
        assert ok, "no element %s to click" % selector

    def fill(self, selector, text):
        ok = self.eval("(() => { const e = document.querySelector(%s); if (!e) return false; "
                       "e.value = %s; e.dispatchEvent(new Event('input', {bubbles: true})); "
                       "return true; })()" % (json.dumps(selector), json.dumps(text)))
        assert ok, "no element %s to fill" % selector

    def submit(self, selector):
        ok = self.eval("(() => { const e = document.querySelector(%s); if (!e) return false; "
                       "e.requestSubmit(); return true; })()" % json.dumps(selector))
        assert ok, "no form %s to submit" % selector

    # Real input events (the browser's own focus moves, default actions and key handlers run),
    # not JavaScript-dispatched ones.
    KEYS = {"Tab": 9, "Enter": 13, "Escape": 27, "Backspace": 8, "Delete": 46, "Home": 36,
            "End": 35, "PageUp": 33, "PageDown": 34, "ArrowLeft": 37, "ArrowUp": 38,
            "ArrowRight": 39, "ArrowDown": 40, " ": 32}

    def press(self, key, shift=False):
        """Presses and releases one key: a name of KEYS or one printable character."""
        mods = 8 if shift else 0
        down = {"type": "keyDown", "key": key, "modifiers": mods}
        if key in self.KEYS:
            down.update(code=key if len(key) > 1 else "Space", windowsVirtualKeyCode=self.KEYS[key],
                        nativeVirtualKeyCode=self.KEYS[key])
            if key in ("Enter", " "):
                down["text"] = "\r" if key == "Enter" else " "
        else:
            down.update(text=key, unmodifiedText=key)
        self.send("Input.dispatchKeyEvent", down)
        up = {k: v for k, v in down.items() if k not in ("text", "unmodifiedText")}
        up["type"] = "keyUp"
        self.send("Input.dispatchKeyEvent", up)

    def mouse_click(self, x, y):
        """A left click at viewport coordinates (CSS pixels)."""
        for kind in ("mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y,
                                                   "button": "left", "clickCount": 1})

    def viewport(self, width, height):
        """Emulates a window of width x height CSS pixels (None restores the real one)."""
        if width is None:
            self.send("Emulation.clearDeviceMetricsOverride")
        else:
            self.send("Emulation.setDeviceMetricsOverride", {
                "width": width, "height": height, "deviceScaleFactor": 1,
                "mobile": False})

    def screenshot(self, path):
        data = self.send("Page.captureScreenshot", {"format": "png"})["data"]
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

    def take_errors(self):
        errs, self.errors = self.errors, []
        return errs

    def close(self):
        try:
            self.call("Browser.close", timeout=5)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._to_child, self._from_child):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self.profile, ignore_errors=True)
