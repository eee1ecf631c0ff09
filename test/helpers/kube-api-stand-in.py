"""A small stand-in for the Kubernetes API server, enough for the real kubectl to get, label and patch Nodes,
CiliumNodes and one coordination.k8s.io/v1 Lease, answering as kube-apiserver does where the failover agent depends on it.

    python3 kube-api-stand-in.py <state dir> <lease namespace>/<lease name> <node> [<node> ...]

Listens on $HOST (127.0.0.1 by default) at $PORT or a port it picks and writes to <state dir>/port. State:
- objects kept in memory, each with a resourceVersion from one counter that every write increments (as etcd's
  revision: k8s.io/apiserver storage/etcd3);
- a PATCH (merge, or strategic merge, which for metadata.labels and a Lease's scalar fields merges the same way) whose
  body carries metadata.resourceVersion different from the object's is refused 409 Conflict, "the object has been
  modified; please apply your changes to the latest version and try again" (k8s.io/apiserver
  pkg/registry/generic/registry/store.go, Update: the precondition on resourceVersion; errors.NewConflict);
- a `null` in a merge patch removes the key (RFC 7386), as a label removal (`kubectl label … key-`) sends;
- <state dir>/deny holds source addresses (one a line) whose requests get no answer: the connection is closed;
  <state dir>/stall: every request waits 30 s before it is answered (an API server that accepts and never answers);
- every request is appended to <state dir>/requests as "METHOD path status".
Discovery is the legacy one (APIVersions, APIGroupList, APIResourceList as application/json): kubectl falls back to it
when the server does not answer the aggregated form (k8s.io/client-go discovery/aggregated_discovery.go).
"""
import http.server
import json
import os
import sys
import threading
import time
import urllib.parse

STATE = sys.argv[1]
LEASE_NS, LEASE_NAME = sys.argv[2].split('/', 1)
NODES = sys.argv[3:]
LOCK = threading.Lock()
revision = [1]


def next_rv():
    revision[0] += 1
    return str(revision[0])


objects = {}
for n in NODES:
    objects[('nodes', '', n)] = {'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': n, 'labels': {'kubernetes.io/hostname': n}, 'resourceVersion': next_rv(), 'uid': 'node-' + n}}
    objects[('ciliumnodes', '', n)] = {'apiVersion': 'cilium.io/v2', 'kind': 'CiliumNode', 'metadata': {'name': n, 'labels': {'kubernetes.io/hostname': n}, 'resourceVersion': next_rv(), 'uid': 'cn-' + n}}
objects[('leases', LEASE_NS, LEASE_NAME)] = {'apiVersion': 'coordination.k8s.io/v1', 'kind': 'Lease', 'metadata': {'name': LEASE_NAME, 'namespace': LEASE_NS, 'resourceVersion': next_rv(), 'uid': 'lease'}, 'spec': {'leaseDurationSeconds': 15}}

RESOURCES = {
    'nodes': ('v1', 'Node', False),
    'ciliumnodes': ('cilium.io/v2', 'CiliumNode', False),
    'leases': ('coordination.k8s.io/v1', 'Lease', True),
}


def resource_list(group_version, names):
    return {'kind': 'APIResourceList', 'apiVersion': 'v1', 'groupVersion': group_version, 'resources': [
        {'name': n, 'singularName': RESOURCES[n][1].lower(), 'namespaced': RESOURCES[n][2], 'kind': RESOURCES[n][1], 'verbs': ['get', 'list', 'patch', 'update']} for n in names]}


DISCOVERY = {
    '/api': {'kind': 'APIVersions', 'versions': ['v1'], 'serverAddressByClientCIDRs': [{'clientCIDR': '0.0.0.0/0', 'serverAddress': '127.0.0.1'}]},
    '/apis': {'kind': 'APIGroupList', 'apiVersion': 'v1', 'groups': [
        {'name': g, 'versions': [{'groupVersion': f'{g}/{v}', 'version': v}], 'preferredVersion': {'groupVersion': f'{g}/{v}', 'version': v}}
        for g, v in (('coordination.k8s.io', 'v1'), ('cilium.io', 'v2'))]},
    '/api/v1': resource_list('v1', ['nodes']),
    '/apis/coordination.k8s.io/v1': resource_list('coordination.k8s.io/v1', ['leases']),
    '/apis/cilium.io/v2': resource_list('cilium.io/v2', ['ciliumnodes']),
    '/version': {'major': '1', 'minor': '32', 'gitVersion': 'v1.32.4'},
}


def merge(target, patch):
    for k, v in patch.items():
        if v is None:
            target.pop(k, None)
        elif isinstance(v, dict) and isinstance(target.get(k), dict):
            merge(target[k], v)
        else:
            target[k] = json.loads(json.dumps(v))


def parse(path):
    """(resource, namespace, name) from /api/v1/nodes/x, /apis/g/v/namespaces/ns/leases/x, …"""
    parts = [p for p in path.split('/') if p]
    rest = parts[2:] if parts[0] == 'api' else parts[3:]
    ns = ''
    if len(rest) >= 2 and rest[0] == 'namespaces':
        ns, rest = rest[1], rest[2:]
    if not rest or rest[0] not in RESOURCES:
        return None
    return rest[0], ns, rest[1] if len(rest) > 1 else None


def status(code, reason, message, details=None):
    return code, {'kind': 'Status', 'apiVersion': 'v1', 'metadata': {}, 'status': 'Failure', 'message': message, 'reason': reason, 'details': details or {}, 'code': code}


def denied(addr):
    try:
        with open(os.path.join(STATE, 'deny')) as f:
            return addr in f.read().split()
    except FileNotFoundError:
        return False


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def log_message(self, *args):
        pass

    def send(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        with open(os.path.join(STATE, 'requests'), 'a') as f:
            f.write(f'{self.client_address[0]} {self.command} {self.path} {code}\n')

    def gate(self):
        if os.path.exists(os.path.join(STATE, 'stall')):
            time.sleep(30)
        if denied(self.client_address[0]):
            # Cut off: the connection closes without an answer, as a dropped route looks to the client.
            self.close_connection = True
            self.connection.close()
            return False
        return True

    def do_GET(self):
        if not self.gate():
            return
        url = urllib.parse.urlparse(self.path)
        if url.path in DISCOVERY:
            return self.send(200, DISCOVERY[url.path])
        key = parse(url.path)
        if not key:
            return self.send(*status(404, 'NotFound', 'the server could not find the requested resource'))
        resource, ns, name = key
        with LOCK:
            if name is None:
                items = [o for (r, n, _), o in objects.items() if r == resource and n == ns]
                return self.send(200, {'kind': RESOURCES[resource][1] + 'List', 'apiVersion': RESOURCES[resource][0], 'metadata': {'resourceVersion': str(revision[0])}, 'items': items})
            obj = objects.get((resource, ns, name))
            if obj is None:
                return self.send(*status(404, 'NotFound', f'{resource} "{name}" not found', {'name': name, 'kind': resource}))
            return self.send(200, obj)

    def do_PATCH(self):
        if not self.gate():
            return
        body = json.loads(self.rfile.read(int(self.headers.get('Content-Length', 0))) or b'{}')
        key = parse(urllib.parse.urlparse(self.path).path)
        with LOCK:
            obj = objects.get(key) if key else None
            if obj is None:
                return self.send(*status(404, 'NotFound', 'not found'))
            want = (body.get('metadata') or {}).get('resourceVersion')
            if want is not None and want != obj['metadata']['resourceVersion']:
                return self.send(*status(409, 'Conflict', f'Operation cannot be fulfilled on {key[0]} "{key[2]}": the object has been modified; please apply your changes to the latest version and try again', {'name': key[2], 'kind': key[0]}))
            body.get('metadata', {}).pop('resourceVersion', None)
            merge(obj, body)
            obj['metadata']['resourceVersion'] = next_rv()
            # Whole or not at all: a reader (the tests poll this file) never sees a half-written one.
            tmp = os.path.join(STATE, f'objects.json.{threading.get_ident()}')
            with open(tmp, 'w') as f:
                json.dump({'/'.join(k): v for k, v in objects.items()}, f)
            os.replace(tmp, os.path.join(STATE, 'objects.json'))
            return self.send(200, obj)


server = http.server.ThreadingHTTPServer((os.environ.get('HOST', '127.0.0.1'), int(os.environ.get('PORT', '0'))), Handler)
with open(os.path.join(STATE, 'port.tmp'), 'w') as f:
    f.write(str(server.server_address[1]))
os.rename(os.path.join(STATE, 'port.tmp'), os.path.join(STATE, 'port'))
server.serve_forever()
