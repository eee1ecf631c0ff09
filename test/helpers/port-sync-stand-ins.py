"""Stand-ins for what port-sync talks to, answering as the real programs do at the versions named (each line cited).

    python3 port-sync-stand-ins.py <state dir> <app>-<version> <username> <password> [<api key>]

Serves, on 127.0.0.1 at ports it picks and writes to <state dir>/ports ("gluetun N\napp M\n"):
- gluetun v3.41.1's control server: GET /v1/portforward with the X-API-Key in <state dir>/gluetun-key answers
  {"port":N} (N from <state dir>/forwarded, 0 when absent), any other key 401 (internal/server/portforward.go:34-46,
  middlewares/auth/middleware.go:55-60);
- the app: qbittorrent-4.6 | -5.0 | -5.1 | -5.2, transmission-3 | -4, deluge-2.0 | -2.1.
Every request to the app is appended to <state dir>/requests as a JSON line {"path", "status", "what"}; the app's
listen port is in <state dir>/listen_port (6881 at start, the value it last accepted after), and its random_port
setting in <state dir>/random_port.
"""
import base64
import http.server
import json
import os
import secrets
import sys
import threading
import urllib.parse

STATE, APP, USER, PASSWORD = sys.argv[1:5]
API_KEY = sys.argv[5] if len(sys.argv) > 5 else ''
NAME, VERSION = APP.rsplit('-', 1)
LOCK = threading.Lock()
app_state = {'listen_port': 6881, 'random_port': True, 'failed': 0, 'sessions': set(), 'tr_session': secrets.token_hex(8)}


def save():
    with open(os.path.join(STATE, 'listen_port'), 'w') as f:
        f.write(str(app_state['listen_port']))
    with open(os.path.join(STATE, 'random_port'), 'w') as f:
        f.write('true' if app_state['random_port'] else 'false')


def read_state(name):
    try:
        return open(os.path.join(STATE, name)).read().strip()
    except FileNotFoundError:
        return ''


def record(path, status, what):
    with open(os.path.join(STATE, 'requests'), 'a') as f:
        f.write(json.dumps({'path': path, 'status': status, 'what': what}) + '\n')


class Base(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def log_message(self, *a):
        pass

    def answer(self, status, body=b'', headers=()):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        if body:
            self.wfile.write(body)

    def body(self):
        return self.rfile.read(int(self.headers.get('Content-Length') or 0))


class Gluetun(Base):
    def do_GET(self):
        key = open(os.path.join(STATE, 'gluetun-key')).read().strip()
        if self.path != '/v1/portforward' or self.headers.get('X-API-Key') != key:
            return self.answer(401, b'Unauthorized\n')
        try:
            port = int(open(os.path.join(STATE, 'forwarded')).read().strip() or 0)
        except FileNotFoundError:
            port = 0
        self.answer(200, json.dumps({'port': port}).encode() + b'\n', [('Content-Type', 'application/json')])


# qBittorrent: the WebUI API v2 (src/webui/webapplication.cpp, src/webui/api/authcontroller.cpp at release-4.6.7,
# -5.0.5, -5.1.4, -5.2.3). Bans after 5 refused logins (preferences.cpp WebUI/MaxAuthenticationFailCount default 5);
# the count is forgotten only at a good login (increaseFailedAttempts; the ban's end is not modelled).
class Qbittorrent(Base):
    cookie = 'QBT_SID_8080' if VERSION == '5.2' else 'SID'  # webapplication.cpp:75, :472 at 5.2.3; "SID" before

    def session(self):
        if VERSION == '5.2' and API_KEY and self.headers.get('Authorization') == 'Bearer ' + API_KEY:
            return True  # apiKeySessionInitialize (webapplication.cpp:758-783)
        jar = self.headers.get('Cookie') or ''
        sids = [c.split('=', 1)[1] for c in jar.split('; ') if c.startswith(self.cookie + '=')]
        return any(s in app_state['sessions'] for s in sids)

    def do_POST(self):
        path = self.path.split('?')[0]
        form = urllib.parse.parse_qs(self.body().decode())
        with LOCK:
            if path == '/api/v2/auth/login':
                return self.login(form)
            if not self.session():
                record(path, 403, 'no session')
                return self.answer(403, b'Forbidden')  # webapplication.cpp:327-328
            if path == '/api/v2/app/setPreferences':
                prefs = json.loads(form['json'][0])
                app_state['listen_port'] = prefs.get('listen_port', app_state['listen_port'])
                app_state['random_port'] = prefs.get('random_port', app_state['random_port'])
                save()
                record(path, 200, 'set')
                return self.answer(200)  # setResult(QString()) at the end: 200, empty (appcontroller.cpp)
            record(path, 404, 'unknown')
            return self.answer(404)

    def do_GET(self):
        path = self.path.split('?')[0]
        with LOCK:
            if not self.session():
                record(path, 403, 'no session')
                return self.answer(403, b'Forbidden')
            if path == '/api/v2/app/preferences':
                record(path, 200, 'preferences')
                # The binding as appcontroller.cpp:391-395 (release-5.2.3) answers it: "" is any interface / address;
                # a test sets it in <state dir>/network_interface and interface_address (as Session\Interface does).
                binding = {k: read_state(f) for k, f in (('current_network_interface', 'network_interface'), ('current_interface_address', 'interface_address'))}
                return self.answer(200, json.dumps({'listen_port': app_state['listen_port'], 'random_port': app_state['random_port'], **binding}).encode())
            record(path, 404, 'unknown')
            return self.answer(404)

    def login(self, form):
        path = '/api/v2/auth/login'
        if self.session():
            record(path, 204 if VERSION == '5.2' else 200, 'already')
            return self.answer(204) if VERSION == '5.2' else self.answer(200, b'Ok.')
        if app_state['failed'] >= 5:
            record(path, 403, 'banned')
            return self.answer(403, b'Your IP address has been banned after too many failed authentication attempts.')
        if form.get('username', [''])[0] == USER and form.get('password', [''])[0] == PASSWORD:
            app_state['failed'] = 0
            sid = secrets.token_hex(16)
            app_state['sessions'].add(sid)
            cookie = [('Set-Cookie', f'{self.cookie}={sid}; HttpOnly; path=/')]
            if VERSION == '5.2':
                record(path, 204, 'ok')
                return self.answer(204, b'', cookie)  # authcontroller.cpp:51-55, webapplication.cpp:370-372
            record(path, 200, 'ok')
            return self.answer(200, b'Ok.', cookie)
        app_state['failed'] += 1
        if VERSION == '5.2':
            record(path, 401, 'refused')
            return self.answer(401, b'Unauthorized')  # authcontroller.cpp:58, webapplication.cpp:424-425
        record(path, 200, 'refused')
        return self.answer(200, b'Fails.')


# Transmission RPC (libtransmission/rpc-server.c handle_request in 3.00, rpc-server.cc in 4.0.6): Basic auth first
# (401), then the session id (409 handing out X-Transmission-Session-Id). 3.00 answers every request 403 after 100
# refused logins in a row until restarted; 4.x counts only with anti-brute-force-enabled (default false: not modelled).
class Transmission(Base):
    def do_POST(self):
        path = self.path
        body = self.body()
        with LOCK:
            if VERSION == '3' and app_state['failed'] >= 100:
                record(path, 403, 'locked')
                return self.answer(403, b'<h1>403: Forbidden</h1><p>Too many unsuccessful login attempts. Please restart transmission-daemon.</p>')
            auth = self.headers.get('Authorization') or ''
            given = base64.b64decode(auth[6:]).decode() if auth.startswith('Basic ') else ''
            if given != f'{USER}:{PASSWORD}':
                app_state['failed'] += 1
                record(path, 401, 'refused')
                return self.answer(401, f'<h1>401: Unauthorized</h1>Unauthorized User. {app_state["failed"]} unsuccessful login attempts.'.encode())
            app_state['failed'] = 0
            if self.headers.get('X-Transmission-Session-Id') != app_state['tr_session']:
                record(path, 409, 'session id')
                return self.answer(409, b'<h1>409: Conflict</h1>', [('X-Transmission-Session-Id', app_state['tr_session'])])
            req = json.loads(body)
            if req['method'] == 'session-get':
                record(path, 200, 'session-get')
                return self.answer(200, json.dumps({'arguments': {'peer-port': app_state['listen_port'], 'peer-port-random-on-start': False}, 'result': 'success'}).encode())
            if req['method'] == 'session-set':
                app_state['listen_port'] = req['arguments'].get('peer-port', app_state['listen_port'])
                save()
                record(path, 200, 'session-set')
                return self.answer(200, json.dumps({'arguments': {}, 'result': 'success'}).encode())
            record(path, 200, 'unknown')
            return self.answer(200, json.dumps({'arguments': {}, 'result': 'method name not recognized'}).encode())


# Deluge's Web UI JSON-RPC (deluge/ui/web/json_api.py, auth.py at deluge-2.0.3 and deluge-2.1.1, the same lines):
# a call without a session {"error": {"message": "Not authenticated", "code": 1}} (json_api.py:166 / :163);
# auth.login answers true or false and bans nobody (auth.py:243-257 / :240-254).
class Deluge(Base):
    def do_POST(self):
        req = json.loads(self.body())
        m, params = req['method'], req['params']
        with LOCK:
            jar = self.headers.get('Cookie') or ''
            sid = [c.split('=', 1)[1] for c in jar.split('; ') if c.startswith('_session_id=')]
            logged_in = any(s in app_state['sessions'] for s in sid)
            headers = []
            result, error = None, None
            if m == 'auth.login':
                if params[0] == PASSWORD:
                    s = secrets.token_hex(16)
                    app_state['sessions'].add(s)
                    headers = [('Set-Cookie', f'_session_id={s}; Path=/json')]
                    result = True
                else:
                    result = False
                record('/json', 200, 'login ok' if result else 'refused')
            elif not logged_in:
                error = {'message': 'Not authenticated', 'code': 1}
                record('/json', 200, 'no session')
            elif m == 'web.connected':
                result = app_state.get('connected', False)
            elif m == 'web.get_hosts':
                result = [['c0ffee', '127.0.0.1', 58846, 'localclient']]
            elif m == 'web.connect':
                app_state['connected'] = True
                result = []
            elif m == 'core.get_config_value':
                result = [app_state['listen_port'], app_state['listen_port'] + 10] if params[0] == 'listen_ports' else None
            elif m == 'core.set_config':
                conf = params[0]
                if 'listen_ports' in conf:
                    app_state['listen_port'] = conf['listen_ports'][0]
                if 'random_port' in conf:
                    app_state['random_port'] = conf['random_port']
                save()
                record('/json', 200, 'set')
            else:
                error = {'message': 'Unknown method', 'code': 2}
            self.answer(200, json.dumps({'result': result, 'error': error, 'id': req['id']}).encode(), [('Content-Type', 'application/json'), *headers])


def serve(handler):
    srv = http.server.ThreadingHTTPServer(('127.0.0.1', 0), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv.server_address[1]


save()
g = serve(Gluetun)
a = serve({'qbittorrent': Qbittorrent, 'transmission': Transmission, 'deluge': Deluge}[NAME])
with open(os.path.join(STATE, 'ports.tmp'), 'w') as f:
    f.write(f'gluetun {g}\napp {a}\n')
os.rename(os.path.join(STATE, 'ports.tmp'), os.path.join(STATE, 'ports'))
threading.Event().wait()
