// A stand-in for the part of the Kubernetes API the failover agent uses, run as `node lease-api-stand-in.js <config.json>`:
//   GET/PUT  /apis/coordination.k8s.io/v1/namespaces/<ns>/leases/<name>
//   PATCH    /api/v1/namespaces/<ns>/pods/<name>   (application/merge-patch+json, labels only)
// as kube-apiserver answers them: 401 without the bearer token; 404 for an object it does not hold; a PUT whose
// metadata.resourceVersion is not the stored one is refused with 409 Conflict (optimistic concurrency,
// staging/src/k8s.io/apiserver/pkg/registry/generic/registry/store.go Update → storage.GuaranteedUpdate at v1.31.0);
// every accepted write gets a new resourceVersion; JSON is written compact, on one line, except for a client whose
// User-Agent starts with "curl" (or `pretty: true` in the config, as `?pretty=true` asks): that one gets JSON indented by
// 2 spaces, as kube-apiserver's isPrettyPrint decides (staging/src/k8s.io/apiserver/pkg/endpoints/handlers/negotiation/
// negotiate.go at v1.31.0: a User-Agent starting with "curl", "Wget" or "Mozilla/5.0"; the serializer then indents with 2 spaces).
// Every request's method and User-Agent are appended to `log` as {op: 'request'}.
// A PATCH with another content type is refused with 415 (the API server takes merge-patch only with its own type).
// What the endpoint controller and CoreDNS do with the pods' labels is replayed here: after each label change the pods
// labelled `<roleLabel>=active` are written to `hostsFile` (one "<ip> <serviceName>" line each) and dnsmasq (`dnsPidFile`)
// re-reads it on SIGHUP; the gateway's name resolves to the holder. Every write is appended to `log` as a JSON line.
// For tests: `POST /_interleave` with a Lease spec makes that spec another client's write that lands between the next
// PUT's read and its write (the race optimistic concurrency exists for).
'use strict';
const fs = require('node:fs');
const http = require('node:http');

const config = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const { listen, token, namespace, lease, pods, roleLabel, hostsFile, dnsPidFile, serviceName, log, pretty } = config;
let rv = 100;
let interleave;
const leases = { [lease]: { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: lease, namespace, resourceVersion: String(rv) }, spec: {} } };
const labels = Object.fromEntries(Object.keys(pods).map((p) => [p, {}]));

const uptime = () => Number(fs.readFileSync('/proc/uptime', 'utf8').split(' ')[0]);
const record = (entry) => fs.appendFileSync(log, `${JSON.stringify({ t: uptime(), ...entry })}\n`);
let indent = 0;
const send = (res, code, obj) => { res.writeHead(code, { 'Content-Type': 'application/json' }); res.end(JSON.stringify(obj, null, indent)); };
const status = (res, code, reason, message) => send(res, code, { kind: 'Status', apiVersion: 'v1', status: 'Failure', message, reason, code });

function publish() {
  const active = Object.keys(pods).filter((p) => labels[p][roleLabel] === 'active');
  if (hostsFile) {
    fs.writeFileSync(`${hostsFile}.tmp`, active.map((p) => `${pods[p]} ${serviceName}\n`).join(''));
    fs.renameSync(`${hostsFile}.tmp`, hostsFile);
  }
  if (dnsPidFile && fs.existsSync(dnsPidFile)) {
    try { process.kill(Number(fs.readFileSync(dnsPidFile, 'utf8').trim()), 'SIGHUP'); } catch { /* dnsmasq gone */ }
  }
  record({ op: 'endpoints', active });
}

const server = http.createServer((req, res) => {
  let data = '';
  req.on('data', (c) => { data += c; });
  req.on('end', () => {
    if (req.method === 'POST' && req.url === '/_interleave') { interleave = JSON.parse(data); return send(res, 200, {}); }
    const ua = req.headers['user-agent'] ?? '';
    indent = pretty || ua.startsWith('curl') || ua.startsWith('Wget') || ua.startsWith('Mozilla/5.0') ? 2 : 0;
    record({ op: 'request', method: req.method, ua });
    if (req.headers.authorization !== `Bearer ${token}`) return status(res, 401, 'Unauthorized', 'Unauthorized');
    const l = /^\/apis\/coordination\.k8s\.io\/v1\/namespaces\/([^/]+)\/leases\/([^/?]+)$/.exec(req.url);
    const p = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/?]+)$/.exec(req.url);
    if (l) {
      let cur = l[1] === namespace ? leases[l[2]] : undefined;
      if (!cur) return status(res, 404, 'NotFound', `leases.coordination.k8s.io "${l[2]}" not found`);
      if (req.method === 'GET') return send(res, 200, cur);
      if (req.method !== 'PUT') return status(res, 405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource');
      let obj;
      try { obj = JSON.parse(data); } catch { return status(res, 400, 'BadRequest', 'invalid JSON'); }
      if (interleave) {
        rv += 1;
        record({ op: 'holder', from: cur.spec.holderIdentity ?? '', to: interleave.holderIdentity ?? '', rv, interleaved: true });
        leases[l[2]] = { ...cur, metadata: { ...cur.metadata, resourceVersion: String(rv) }, spec: interleave };
        interleave = undefined;
        cur = leases[l[2]];
      }
      if (obj.metadata?.resourceVersion !== undefined && obj.metadata.resourceVersion !== cur.metadata.resourceVersion) {
        record({ op: 'conflict', holder: obj.spec?.holderIdentity, sent: obj.metadata.resourceVersion, stored: cur.metadata.resourceVersion });
        return status(res, 409, 'Conflict', `Operation cannot be fulfilled on leases.coordination.k8s.io "${l[2]}": the object has been modified; please apply your changes to the latest version and try again`);
      }
      rv += 1;
      const before = cur.spec.holderIdentity ?? '';
      leases[l[2]] = { ...cur, metadata: { ...cur.metadata, resourceVersion: String(rv) }, spec: obj.spec ?? {} };
      const after = leases[l[2]].spec.holderIdentity ?? '';
      record({ op: before === after ? 'renew' : 'holder', from: before, to: after, rv });
      return send(res, 200, leases[l[2]]);
    }
    if (p) {
      if (req.method !== 'PATCH') return status(res, 405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource');
      if (req.headers['content-type'] !== 'application/merge-patch+json') return status(res, 415, 'UnsupportedMediaType', `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml`);
      if (p[1] !== namespace || !(p[2] in pods)) return status(res, 404, 'NotFound', `pods "${p[2]}" not found`);
      let obj;
      try { obj = JSON.parse(data); } catch { return status(res, 400, 'BadRequest', 'invalid JSON'); }
      const change = obj.metadata?.labels ?? {};
      let changed = false;
      for (const [k, v] of Object.entries(change)) {
        if (v === null) { if (k in labels[p[2]]) { delete labels[p[2]][k]; changed = true; } }
        else if (labels[p[2]][k] !== v) { labels[p[2]][k] = v; changed = true; }
      }
      if (changed) { record({ op: 'label', pod: p[2], labels: { ...labels[p[2]] } }); publish(); }
      return send(res, 200, { kind: 'Pod', apiVersion: 'v1', metadata: { name: p[2], namespace, labels: labels[p[2]] } });
    }
    return status(res, 404, 'NotFound', 'the server could not find the requested resource');
  });
});
server.listen(listen.port, listen.host, () => { publish(); fs.writeFileSync(`${log}.ready`, String(server.address().port)); });
