/**
 * Key names for `computer.key` and `computer.type`, as the reference bridge (Playwright's
 * keyboard) understands them: named keys (Enter, Tab, ArrowDown, ...), single characters,
 * `KeyA`/`Digit1` codes, and chords joined with "+" (Control+A, Shift+Tab).
 */
export type KeyDefinition = { key: string; code: string; keyCode: number; text?: string; location?: number };

/** Named keys whose `key` and `code` are their name, by Windows virtual key code. */
const PLAIN_KEYS: Record<string, number> = {
  Tab: 9,
  Escape: 27,
  Backspace: 8,
  Delete: 46,
  Insert: 45,
  Home: 36,
  End: 35,
  PageUp: 33,
  PageDown: 34,
  ArrowLeft: 37,
  ArrowUp: 38,
  ArrowRight: 39,
  ArrowDown: 40,
  CapsLock: 20,
};
const NAMED: Record<string, KeyDefinition> = {
  Enter: { key: "Enter", code: "Enter", keyCode: 13, text: "\r" },
  Space: { key: " ", code: "Space", keyCode: 32, text: " " },
  Shift: { key: "Shift", code: "ShiftLeft", keyCode: 16, location: 1 },
  Control: { key: "Control", code: "ControlLeft", keyCode: 17, location: 1 },
  Alt: { key: "Alt", code: "AltLeft", keyCode: 18, location: 1 },
  Meta: { key: "Meta", code: "MetaLeft", keyCode: 91, location: 1 },
};
for (const [name, keyCode] of Object.entries(PLAIN_KEYS)) NAMED[name] = { key: name, code: name, keyCode };
for (let n = 1; n <= 12; n++) NAMED[`F${n}`] = { key: `F${n}`, code: `F${n}`, keyCode: 111 + n };

/** CDP modifier bits. */
export const MODIFIERS: Record<string, number> = { Alt: 1, Control: 2, ControlOrMeta: 2, Meta: 4, Shift: 8 };

/** The definition of one key name; throws on a name no keyboard has. */
export function keyDefinition(name: string, shift = false): KeyDefinition {
  if (name === "ControlOrMeta") return NAMED.Control!;
  const named = NAMED[name];
  if (named) return named;
  const code = /^Key([A-Z])$/.exec(name)?.[1] ?? /^Digit([0-9])$/.exec(name)?.[1];
  if (code) return keyDefinition(code.toLowerCase(), shift);
  if ([...name].length !== 1) throw new Error(`Unknown key: "${name}"`);
  if (/^[a-z]$/i.test(name)) {
    const upper = name.toUpperCase();
    const key = shift ? upper : name;
    return { key, code: `Key${upper}`, keyCode: upper.charCodeAt(0), text: key };
  }
  if (/^[0-9]$/.test(name)) return { key: name, code: `Digit${name}`, keyCode: name.charCodeAt(0), text: name };
  if (name === " ") return NAMED.Space!;
  return { key: name, code: "", keyCode: 0, text: name };
}

/** Splits "Control+Shift+A" into its modifiers and its key; "Control++" presses "+". */
export function parseChord(chord: string): { modifiers: string[]; key: string } {
  const parts = chord.split("+");
  let key = parts.pop() ?? "";
  if (key === "" && chord.endsWith("+")) {
    parts.pop();
    key = "+";
  }
  for (const m of parts) if (!(m in MODIFIERS)) throw new Error(`Unknown key: "${m}"`);
  return { modifiers: parts, key };
}
