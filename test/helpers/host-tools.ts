/**
 * Stand-ins for the host tools the gateway node's hooks call (`ip`, `nft`, `kubectl`), for running a hook at unit
 * speed: each records its arguments in `calls.log` and answers as the real one does where the hook depends on it.
 * - `ip rule`: a rule list kept in a file; `rule del` removes the first rule that matches every selector given and
 *   fails as iproute2 does ("RTNETLINK answers: No such file or directory", status 2) when none matches, so a
 *   `while ip rule del …` loop ends; `rule add` of a rule already there (same priority, selector and action) fails as
 *   the kernel does since Linux 4.14 (NLM_F_EXCL: "RTNETLINK answers: File exists", status 2; checked against iproute2
 *   6.1 in a network namespace); `rule show [priority N]` prints `N:\tfrom A lookup T` / `N:\tfrom A blackhole`.
 * - `ip route`: recorded; `ip … addr show`: what the test sets in `addr`.
 * - `nft`: the tables loaded kept in a file (`tables`, @default the kill switch's, as its unit loaded it at boot):
 *   `nft -f FILE` loads the file's `table F N` (a missing file fails: "Could not open file", status 1), `list table F N`
 *   and `add element F N S {…}` fail on a table not loaded ("Error: No such file or directory", status 1), `flush
 *   ruleset` removes every table; anything else is refused as unsupported. Same answers as nft 1.0.6 in a namespace.
 * - `kubectl label`: refuses to change an existing label without `--overwrite`, as kubectl does
 *   ("error: 'L' already has a value (V), and --overwrite is false", status 1), and a value that is no label value
 *   ("error: invalid label value", status 1: kubectl's own check, before any request); labels kept per kind/name.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { spawnSync } from 'node:child_process';

const IP = `#!/bin/bash
d=$(dirname "$0")
echo "ip $*" >> "$d/calls.log"
while [ "\${1:-}" = -4 ] || [ "\${1:-}" = -6 ] || [ "\${1:-}" = -o ]; do shift; done
rules="$d/rules"; touch "$rules"
case $1 in
  rule)
    verb=$2; shift 2
    from= prio= action=
    while [ $# -gt 0 ]; do
      case $1 in
        from) from=$2; shift 2 ;; priority|pref) prio=$2; shift 2 ;; lookup|table) action="lookup $2"; shift 2 ;;
        blackhole) action=blackhole; shift ;; *) echo "ip stand-in: unsupported rule word $1" >&2; exit 1 ;;
      esac
    done
    case $verb in
      add)
        if grep -qxF "\${prio:-32765}|\${from:-all}|\${action}" "$rules"; then echo "RTNETLINK answers: File exists" >&2; exit 2; fi
        echo "\${prio:-32765}|\${from:-all}|\${action}" >> "$rules"; sort -t'|' -k1,1n -s "$rules" -o "$rules" ;;
      del)
        n=$(awk -F'|' -v f="$from" -v p="$prio" -v a="$action" '(f == "" || $2 == f) && (p == "" || $1 == p) && (a == "" || $3 == a) { print NR; exit }' "$rules")
        [ -n "$n" ] || { echo "RTNETLINK answers: No such file or directory" >&2; exit 2; }
        sed -i "\${n}d" "$rules" ;;
      show|list) awk -F'|' -v p="$prio" 'p == "" || $1 == p { printf "%s:\\tfrom %s %s\\n", $1, $2, $3 }' "$rules" ;;
    esac ;;
  route) echo "$*" >> "$d/routes" ;;
  addr) cat "$d/addr" 2>/dev/null ;;
  *) echo "ip stand-in: unsupported: $*" >&2; exit 1 ;;
esac
`;

const NFT = `#!/bin/bash
d=$(dirname "$0")
echo "nft $*" >> "$d/calls.log"
tables="$d/nft-tables"; touch "$tables"
missing() { echo "Error: No such file or directory" >&2; exit 1; }
case "$1 \${2:-}" in
  "-f "*)
    [ -r "$2" ] || { echo "internal:0:0-0: Error: Could not open file \"$2\": No such file or directory" >&2; exit 1; }
    grep -oE '^table [a-z0-9]+ [A-Za-z0-9_-]+' "$2" | cut -d' ' -f2- | while read -r t; do grep -qxF "$t" "$tables" || echo "$t" >> "$tables"; done ;;
  "list table") grep -qxF "$3 $4" "$tables" || missing; printf 'table %s %s {\n}\n' "$3" "$4" ;;
  "add element") grep -qxF "$3 $4" "$tables" || missing; shift 2; echo "$*" >> "$d/nft-elements" ;;
  "flush ruleset") : > "$tables" ;;
  *) echo "nft stand-in: unsupported: $*" >&2; exit 1 ;;
esac
`;

const KUBECTL = `#!/bin/bash
d=$(dirname "$0")
echo "kubectl $*" >> "$d/calls.log"
[ -e "$d/kubectl-fails" ] && { echo "error: You must be logged in to the server (Unauthorized)" >&2; exit 1; }
[ "$1" = label ] || { echo "kubectl stand-in: unsupported: $*" >&2; exit 1; }
kind=$2 name=$3; shift 3
overwrite=
for a in "$@"; do [ "$a" = --overwrite ] && overwrite=1; done
mkdir -p "$d/labels"; f="$d/labels/$kind.$name"; touch "$f"
for a in "$@"; do
  case $a in
    --overwrite | --request-timeout=*) ;;
    *=*) k=\${a%%=*} v=\${a#*=}
      if ! printf '%s' "$v" | grep -qE '^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$' || [ \${#v} -gt 63 ]; then
        echo "error: invalid label value: \"$a\"" >&2; exit 1
      fi
      old=$(grep -F "$k=" "$f" | head -n 1 | cut -d= -f2-)
      if [ -n "$old" ] && [ "$old" != "$v" ] && [ -z "$overwrite" ]; then
        echo "error: '$k' already has a value ($old), and --overwrite is false" >&2; exit 1
      fi
      grep -vF "$k=" "$f" > "$f.n"; echo "$k=$v" >> "$f.n"; mv "$f.n" "$f" ;;
    *-) k=\${a%-}; grep -vF "$k=" "$f" > "$f.n"; mv "$f.n" "$f" ;;
  esac
done
echo "$kind/$name labeled"
`;

export interface HostTools {
  readonly dir: string;
  /** Every call, in order (`ip …`, `nft …`, `kubectl …`). */
  calls(): string[];
  /** The routing rules as `ip rule show` prints them. */
  rules(): string[];
  /** Each `ip route` call's arguments. */
  routes(): string[];
  /** The nft tables loaded (`family name`), and each `add element` call's arguments. */
  nftTables(): string[];
  nftElements(): string[];
  /** `<key>=<value>` lines of a Node's or CiliumNode's labels. */
  labels(kind: string, name: string): string[];
  /** Runs a script text with the stand-ins first on PATH; `env` adds to the environment. */
  run(text: string, env?: Record<string, string>): { status: number | null; stdout: string; stderr: string };
}

/** A directory of stand-ins; `addr` is what `ip -o addr show` prints; `tables` the nft tables loaded (`family name`). */
export function hostTools(addr = '', tables: readonly string[] = ['inet tunnelwright_killswitch']): HostTools {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-host-tools-'));
  fs.writeFileSync(path.join(dir, 'ip'), IP, { mode: 0o755 });
  fs.writeFileSync(path.join(dir, 'nft'), NFT, { mode: 0o755 });
  fs.writeFileSync(path.join(dir, 'kubectl'), KUBECTL, { mode: 0o755 });
  fs.writeFileSync(path.join(dir, 'addr'), addr);
  fs.writeFileSync(path.join(dir, 'nft-tables'), tables.map((t) => `${t}\n`).join(''));
  const read = (f: string) => (fs.existsSync(path.join(dir, f)) ? fs.readFileSync(path.join(dir, f), 'utf8').split('\n').filter(Boolean) : []);
  return {
    dir,
    calls: () => read('calls.log'),
    rules: () => spawnSync(path.join(dir, 'ip'), ['rule', 'show'], { encoding: 'utf8' }).stdout.split('\n').filter(Boolean),
    routes: () => read('routes'),
    nftTables: () => read('nft-tables'),
    nftElements: () => read('nft-elements'),
    labels: (kind, name) => read(`labels/${kind}.${name}`),
    run(text, env = {}) {
      const file = path.join(dir, `script-${Math.random().toString(36).slice(2)}.sh`);
      fs.writeFileSync(file, text, { mode: 0o755 });
      const r = spawnSync('sh', [file], { encoding: 'utf8', env: { ...process.env, PATH: `${dir}:${process.env.PATH}`, KUBECTL: path.join(dir, 'kubectl'), ...env } });
      return { status: r.status, stdout: r.stdout, stderr: r.stderr };
    },
  };
}

/** A hook's text with one setting replaced (a path the test cannot write, moved into its directory); throws when absent. */
export function withSetting(text: string, name: string, value: string): string {
  const re = new RegExp(`^${name}='[^']*'$`, 'm');
  if (!re.test(text)) throw new Error(`no setting ${name} in the script`);
  return text.replace(re, `${name}='${value}'`);
}
