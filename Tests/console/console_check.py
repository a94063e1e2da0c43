#!/usr/bin/env python3
"""Drives the web console in headless Chromium, through the DevTools protocol over a pipe
(--remote-debugging-pipe: no port, no WebSocket library), as a user would see it.

It opens the console, checks that the swatch of a chord the caller set has that chord's
colour on screen (a pixel of a screenshot), adds a chordset through the JSON API and
checks it appears without a reload, then moves the timeline slider back and checks the
page shows the store as it was. Prints one line per check; exits 1 on the first failure.

Used by Tests/ChordStoreCLITests/ConsoleTests.swift; also by hand:
  console_check.py --chromium chromium --base http://127.0.0.1:7421 --token-file DATA/admin.token \
      --chord UUID --hue 0.6 --purity 0.8 --brightness 0.9 --screenshot docs/console.png
"""
import argparse, base64, colorsys, json, os, shutil, struct, subprocess, sys, tempfile, time, urllib.request, uuid, zlib


class BrowserGone(RuntimeError):
    """Chromium itself exited (a crash, or the machine's memory): not a finding about the page."""


class DevTools:
    """One Chromium, spoken to over fds 3 (its input) and 4 (its output)."""

    def __init__(self, chromium, width, height):
        to_chrome_r, self.to_chrome = os.pipe()
        self.from_chrome, from_chrome_w = os.pipe()
        self.profile = tempfile.TemporaryDirectory(prefix='chordstore-chromium-', ignore_cleanup_errors=True)

        def child_fds():
            # Via fds out of the way, whichever numbers the pipes got; subprocess then
            # closes every fd but 0-2 and pass_fds.
            high_r, high_w = os.dup2(to_chrome_r, 100), os.dup2(from_chrome_w, 101)
            os.dup2(high_r, 3)
            os.dup2(high_w, 4)

        args = [chromium, '--headless=new', '--remote-debugging-pipe', '--disable-gpu', '--no-first-run',
                '--no-default-browser-check', '--disable-dev-shm-usage', '--hide-scrollbars', '--mute-audio',
                '--force-color-profile=srgb', '--disable-crash-reporter', '--disable-breakpad', f'--window-size={width},{height}',
                f'--user-data-dir={self.profile.name}', 'about:blank']
        if os.geteuid() == 0:
            args.insert(1, '--no-sandbox')  # Chromium's sandbox refuses root
        self.log = tempfile.TemporaryFile()
        self.process = subprocess.Popen(args, pass_fds=(3, 4), preexec_fn=child_fds,
                                        stdout=subprocess.DEVNULL, stderr=self.log)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.next_id = 0
        self.buffer = b''
        self.session = None

    def stderr_tail(self):
        self.log.seek(0)
        return self.log.read().decode(errors='replace')[-1500:]

    def send(self, method, params=None, session=True):
        self.next_id += 1
        message = {'id': self.next_id, 'method': method, 'params': params or {}}
        if session and self.session:
            message['sessionId'] = self.session
        try:
            os.write(self.to_chrome, json.dumps(message).encode() + b'\0')
        except BrokenPipeError:
            self.process.wait()
            raise BrowserGone(f'Chromium exited ({self.process.returncode}) before {method}; its log: {self.stderr_tail()}')
        while True:
            while b'\0' not in self.buffer:
                chunk = os.read(self.from_chrome, 1 << 16)
                if not chunk:
                    raise BrowserGone(f'Chromium closed the DevTools pipe (exit {self.process.wait()}); its log: {self.stderr_tail()}')
                self.buffer += chunk
            raw, self.buffer = self.buffer.split(b'\0', 1)
            reply = json.loads(raw)
            if reply.get('id') == self.next_id:
                if 'error' in reply:
                    raise RuntimeError(f'{method}: {reply["error"]}')
                return reply['result']

    def evaluate(self, expression):
        result = self.send('Runtime.evaluate', {'expression': expression, 'returnByValue': True, 'awaitPromise': True})
        if 'exceptionDetails' in result:
            raise RuntimeError(f'{expression}: {result["exceptionDetails"]}')
        return result['result'].get('value')

    def wait_for(self, expression, what, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if self.evaluate(expression):
                    return
            except RuntimeError:
                pass  # the page is still loading: its elements are not there yet
            time.sleep(0.1)
        message = self.evaluate("document.getElementById('message') ? document.getElementById('message').textContent : ''")
        raise RuntimeError(f'timed out after {timeout} s waiting for {what} (the page says: {message!r})')

    def close(self):
        """Asks Chromium to quit (it ends its own renderers), then kills it if it does not."""
        try:
            self.session = None
            os.write(self.to_chrome, json.dumps({'id': self.next_id + 1, 'method': 'Browser.close'}).encode() + b'\0')
            self.process.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.process.kill()
            self.process.wait()
        for fd in (self.to_chrome, self.from_chrome):
            os.close(fd)
        shutil.rmtree(self.profile.name, ignore_errors=True)


def png_pixel(png):
    """The first pixel of a PNG (8-bit RGB or RGBA), as (r, g, b)."""
    assert png[:8] == b'\x89PNG\r\n\x1a\n', 'not a PNG'
    position, data, colour_type = 8, b'', None
    while position < len(png):
        length, kind = struct.unpack('>I4s', png[position:position + 8])
        body = png[position + 8:position + 8 + length]
        if kind == b'IHDR':
            _, _, depth, colour_type = struct.unpack('>IIBB', body[:10])
            assert depth == 8 and colour_type in (2, 6), f'unexpected PNG format {depth}/{colour_type}'
        elif kind == b'IDAT':
            data += body
        position += 12 + length
    raw = zlib.decompress(data)
    # Byte 0 is the row's filter; every filter predicts 0 for a row's first pixel of the first row.
    return tuple(raw[1:4])


def api(base, token, method, request):
    call = urllib.request.Request(f'{base}/api/chordstore.v1.ChordStore/{method}', data=json.dumps(request).encode(),
                                  headers={'Content-Type': 'application/json', 'Authorization': f'Bearer {token}'})
    with urllib.request.urlopen(call, timeout=30) as response:
        return json.loads(response.read())


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--chromium', default='chromium')
    parser.add_argument('--base', required=True, help='the HTTP endpoint, e.g. http://127.0.0.1:7421')
    parser.add_argument('--token-file', required=True)
    parser.add_argument('--chord', required=True, help='the id of a chord whose colour the caller set')
    parser.add_argument('--hue', type=float, required=True)
    parser.add_argument('--purity', type=float, required=True)
    parser.add_argument('--brightness', type=float, required=True)
    parser.add_argument('--screenshot', help='also save a screenshot of the whole page here')
    parser.add_argument('--timeout', type=float, default=30)
    args = parser.parse_args()
    # A browser that dies under it (not a check that fails) is started again, twice at most.
    for attempt in (1, 2, 3):
        try:
            return check(args)
        except BrowserGone as error:
            if attempt == 3:
                raise
            print(f'note: {error}; starting Chromium again', file=sys.stderr)


def check(args):
    token = open(args.token_file).read().strip()
    chord = args.chord.upper()

    browser = DevTools(args.chromium, 1280, 900)
    try:
        target = browser.send('Target.createTarget', {'url': 'about:blank'})['targetId']
        browser.session = browser.send('Target.attachToTarget', {'targetId': target, 'flatten': True})['sessionId']
        browser.send('Emulation.setDeviceMetricsOverride', {'width': 1280, 'height': 900, 'deviceScaleFactor': 1, 'mobile': False})
        browser.send('Page.enable')
        browser.send('Page.navigate', {'url': f'{args.base}/console/#store=default&token={token}'})
        # The link fills in the form; signing in is the user's click.
        browser.wait_for("document.getElementById('login-token').value !== ''", 'the sign-in form, filled from the link', args.timeout)
        browser.evaluate("document.getElementById('login-form').requestSubmit()")
        swatch = f'document.querySelector(\'.swatch[data-chord="{chord}"]\')'
        browser.wait_for(f'{swatch} !== null', f'the swatch of chord {chord}', args.timeout)
        browser.wait_for("document.getElementById('live').textContent === 'live'", 'the live feed', args.timeout)
        browser.evaluate('window.chordstoreLoaded = "once"')
        print('ok: the console shows the chordsets after signing in with the token the link filled in')

        # A pixel in the middle of the swatch has the chord's colour (HSB to sRGB).
        browser.evaluate(f'{swatch}.scrollIntoView({{block: "center"}})')
        time.sleep(0.3)
        rect = browser.evaluate(f'(() => {{ const r = {swatch}.getBoundingClientRect(); return [r.x, r.y, r.width, r.height]; }})()')
        x, y = rect[0] + rect[2] / 2, rect[1] + rect[3] / 2
        shot = browser.send('Page.captureScreenshot', {'format': 'png', 'clip': {'x': x, 'y': y, 'width': 1, 'height': 1, 'scale': 1}})
        seen = png_pixel(base64.b64decode(shot['data']))
        wanted = tuple(round(c * 255) for c in colorsys.hsv_to_rgb(args.hue, args.purity, args.brightness))
        if any(abs(a - b) > 3 for a, b in zip(seen, wanted)):
            raise RuntimeError(f'the swatch of chord {chord} shows rgb{seen}, not the chord colour rgb{wanted}')
        print(f'ok: the swatch at ({x:.0f}, {y:.0f}) shows rgb{seen}, the chord colour rgb{wanted}')

        if args.screenshot:
            browser.evaluate('window.scrollTo(0, 0)')
            time.sleep(0.3)
            page = browser.send('Page.captureScreenshot', {'format': 'png'})
            with open(args.screenshot, 'wb') as file:
                file.write(base64.b64decode(page['data']))
            print(f'ok: saved a screenshot to {args.screenshot}')

        # An add through the API appears without a reload.
        before = int(api(args.base, token, 'GetProfile', {}).get('last_sequence', '0'))
        title = f'Live {uuid.uuid4().hex[:8]}'
        api(args.base, token, 'AddChordset', {'title': title})
        titles = "[...document.querySelectorAll('.chordset .title')].map(t => t.firstChild.textContent)"
        browser.wait_for(f'{titles}.includes({json.dumps(title)}) && window.chordstoreLoaded === "once"',
                         f'the new chordset "{title}" without a reload', args.timeout)
        print(f'ok: "{title}", added through the API, appeared without a reload')

        # The timeline slider at the event before the add shows the store without it.
        browser.evaluate(f'(() => {{ const s = document.getElementById("asof"); s.value = "{before}"; s.dispatchEvent(new Event("input")); }})()')
        browser.wait_for(f'!{titles}.includes({json.dumps(title)}) && document.getElementById("asof-label").textContent === "as of event {before}"'
                         f' && {swatch} !== null', f'the store as of event {before}', args.timeout)
        print(f'ok: the timeline at event {before} shows the store without "{title}"')
        browser.evaluate('document.getElementById("now").click()')
        browser.wait_for(f'{titles}.includes({json.dumps(title)})', 'the store as it is now again', args.timeout)
        print('ok: "Back to now" shows it again')
    finally:
        browser.close()


if __name__ == '__main__':
    try:
        main()
    except Exception as error:  # for the Swift test to show: what failed, and where
        import traceback
        where = ' <- '.join(f'{frame.name}:{frame.lineno}' for frame in reversed(traceback.extract_tb(error.__traceback__)))
        print(f'FAILED: {type(error).__name__}: {error} (at {where})')
        sys.exit(1)
