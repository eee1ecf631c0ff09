/**
 * Every script the library writes is a file of its own under src/ (src/assets.ts): each one passes shellcheck for the
 * shell its shebang names, with no finding at any severity. Skipped with a notice where shellcheck is absent, a
 * failure under CI=true (describeWithTools).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describeWithTools, run } from '../system/tools';

const SRC = path.resolve(__dirname, '../../src');

function scripts(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? scripts(p) : e.name.endsWith('.sh') ? [p] : [];
  });
}

const FILES = scripts(SRC).map((p) => path.relative(SRC, p)).sort();

/** The dialect shellcheck checks a script as: the shell its shebang names. */
function dialect(text: string): string | undefined {
  const m = /^#!\s*(?:\/usr)?\/bin\/(?:env\s+)?(sh|bash|ash|dash)\b/.exec(text);
  return m ? (m[1] === 'ash' ? 'busybox' : m[1]) : undefined;
}

describe('the scripts the library writes', () => {
  it('are files under src/', () => {
    expect(FILES.length).toBeGreaterThan(0);
  });
  it.each(FILES)('%s names its shell in a shebang', (file) => {
    expect(dialect(fs.readFileSync(path.join(SRC, file), 'utf8'))).toBeDefined();
  });
});

describeWithTools('the scripts the library writes, under shellcheck', ['shellcheck'], () => {
  it.each(FILES)('%s is shellcheck-clean', (file) => {
    const text = fs.readFileSync(path.join(SRC, file), 'utf8');
    const shell = dialect(text) === 'busybox' ? 'sh' : dialect(text) ?? 'sh';
    const r = run('shellcheck', ['-s', shell, '-S', 'style', path.join(SRC, file)]);
    expect(r.output).toBe('');
    expect(r.status).toBe(0);
  });
});
