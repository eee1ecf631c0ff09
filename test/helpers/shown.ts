/** How a message shows a string the user gave: quoted, and over 120 characters cut to its first 60 and its length. */
export function shown(s: string): string {
  return s.length > 120 ? `${JSON.stringify(s.slice(0, 60))}… (${s.length} characters)` : JSON.stringify(s);
}
