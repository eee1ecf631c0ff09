/**
 * A template the library writes (an nft table), its values by named substitution: each `@NAME@` in a line is replaced
 * by its text value, and a line that is only `@NAME@` by the lines of its list value (none: the line goes). Throws when
 * the template names a value not given, or a value given is not named: the file and its caller agree on every name.
 */
export function fillTemplate(text: string, values: Readonly<Record<string, string | readonly string[]>>): string {
  const used = new Set<string>();
  const out: string[] = [];
  for (const line of text.split('\n')) {
    const block = /^@([A-Z][A-Z0-9_]*)@$/.exec(line);
    const listed = block ? values[block[1]] : undefined;
    if (block && Array.isArray(listed)) {
      used.add(block[1]);
      out.push(...listed);
      continue;
    }
    out.push(line.replace(/@([A-Z][A-Z0-9_]*)@/g, (_m, name: string) => {
      const v = values[name];
      if (typeof v !== 'string') throw new Error(`template: no text value for @${name}@`);
      used.add(name);
      return v;
    }));
  }
  const unused = Object.keys(values).filter((k) => !used.has(k));
  if (unused.length > 0) throw new Error(`template: ${unused.map((k) => `@${k}@`).join(', ')} not in the template`);
  return out.join('\n');
}

/** A filled template's lines, without the final newline's empty line (to go into another template's list value). */
export function templateLines(filled: string): string[] {
  return filled.replace(/\n$/, '').split('\n');
}
