// The shared lenient action parser: LLM agents wrap their command in many ways
// ("<action>left</action>", "Action: left", "**Left**", "> go to desk 1", a <think> block
// first). Everything here is total: any input gives a string or null, never an exception,
// so an environment can mark unparseable text invalid and leave its state unchanged.

/** Longest action text we look at; longer responses are cut (a runaway generation is still parsed). */
const MAX_ACTION_CHARS = 4000;

/**
 * The command part of a raw response, trimmed but with its case kept (search queries and
 * expressions need their text). Priority: the last <action>...</action>, else the last
 * <answer>...</answer> (RAGEN's format), else the text after the last "Action:" label,
 * else the whole response. <think>...</think> blocks are dropped first.
 */
export function extractAction(raw: unknown): string {
  if (typeof raw !== "string") return "";
  let text = raw.length > MAX_ACTION_CHARS * 4 ? raw.slice(-MAX_ACTION_CHARS * 4) : raw;
  text = text.replace(/<think>[\s\S]*?<\/think>/gi, " ");
  const tagged = lastTagContent(text, "action") ?? lastTagContent(text, "answer");
  if (tagged !== null) text = tagged;
  else {
    const labelled = [...text.matchAll(/\baction\b[ \t*_]*[:=][ \t*_]*([^\n]*)/gi)];
    if (labelled.length > 0) text = labelled[labelled.length - 1][1];
  }
  return stripDecorations(text).slice(0, MAX_ACTION_CHARS);
}

/** Lower-case, single-spaced form used to compare an action with the admissible ones. */
export function normalizeAction(text: string): string {
  return stripDecorations(text)
    .toLowerCase()
    .replace(/\s+/g, " ")
    .replace(/\s*([[\]])\s*/g, "$1")
    .trim();
}

/**
 * Maps raw agent text onto one of the candidate commands (compared after normalisation),
 * or null. `aliases` maps extra normalised spellings (e.g. "north") to a candidate.
 */
export function matchAction(raw: unknown, candidates: readonly string[], aliases: Readonly<Record<string, string>> = {}): string | null {
  const said = normalizeAction(extractAction(raw));
  if (said === "") return null;
  const variants = [said, trimTrailing(said, ".!?;, ")];
  for (const v of variants) {
    for (const c of candidates) if (normalizeAction(c) === v) return c;
    const alias = aliases[v];
    if (alias !== undefined && candidates.includes(alias)) return alias;
  }
  return null;
}

export interface Command {
  /** The verb as listed by the caller (lower case). */
  verb: string;
  /** The argument text, trimmed, case kept. */
  arg: string;
}

/**
 * Parses a verb-with-argument command: "search[red shoes]", "<search>red shoes</search>",
 * "search: red shoes", "search(red shoes)" or "search red shoes". Tags win over the rest
 * (Search-R1 writes <search>q</search> and <answer>a</answer>). Returns null when no
 * listed verb starts the command.
 */
export function parseCommand(raw: unknown, verbs: readonly string[]): Command | null {
  if (typeof raw !== "string") return null;
  const text = raw.length > MAX_ACTION_CHARS * 4 ? raw.slice(-MAX_ACTION_CHARS * 4) : raw;
  const withoutThink = text.replace(/<think>[\s\S]*?<\/think>/gi, " ");
  // The last verb tag in the response, whichever verb it is.
  let best: { index: number; cmd: Command } | null = null;
  for (const verb of verbs) {
    for (const m of withoutThink.matchAll(verbPatterns(verb).tag)) {
      if (best === null || m.index! > best.index) best = { index: m.index!, cmd: { verb: verb.toLowerCase(), arg: m[1].trim() } };
    }
  }
  if (best !== null) return best.cmd;

  const body = extractAction(withoutThink);
  for (const verb of verbs) {
    for (const re of verbPatterns(verb).forms) {
      const m = body.match(re);
      if (m) return { verb: verb.toLowerCase(), arg: stripDecorations(m[1]) };
    }
  }
  return null;
}

// Compiled once per verb: parseCommand runs on every step of the open-action environments.
const patternCache = new Map<string, { tag: RegExp; forms: RegExp[] }>();
function verbPatterns(verb: string): { tag: RegExp; forms: RegExp[] } {
  let p = patternCache.get(verb);
  if (!p) {
    const v = escapeRegExp(verb);
    p = {
      tag: new RegExp(`<${v}>([\\s\\S]*?)</${v}>`, "gi"),
      forms: [
        new RegExp(`^${v}\\s*\\[([\\s\\S]*)\\]$`, "i"), // search[q]
        new RegExp(`^${v}\\s*\\(([\\s\\S]*)\\)$`, "i"), // search(q)
        new RegExp(`^${v}\\s*[:=]\\s*([\\s\\S]*)$`, "i"), // search: q
        new RegExp(`^${v}\\s+([\\s\\S]*)$`, "i"), // search q
      ],
    };
    patternCache.set(verb, p);
  }
  return p;
}

function lastTagContent(text: string, tag: string): string | null {
  const matches = [...text.matchAll(new RegExp(`<${tag}>([\\s\\S]*?)</${tag}>`, "gi"))];
  return matches.length > 0 ? matches[matches.length - 1][1] : null;
}

/** Removes markdown and quoting around a command: code fences, backticks, bold, quotes, a leading "> ". */
function stripDecorations(text: string): string {
  // Written without end-anchored regexes: "\s*x$" backtracks quadratically on long blank runs.
  let t = text.trim();
  for (let i = 0; i < 3; i++) {
    const before = t;
    t = t.replace(/^```[a-z]*\s*/i, "");
    if (t.endsWith("```")) t = t.slice(0, -3).trimEnd();
    t = t.replace(/^>\s*/, "");
    const q = t.charAt(0);
    if (t.length >= 2 && "`\"'".includes(q) && t.endsWith(q)) t = t.slice(1, -1);
    // Markdown emphasis, balanced or left over from "**Action:** x".
    t = trimChars(t, "*_ \t\r\n");
    if (t === before) break;
  }
  return t;
}

/** Drops trailing characters from a set (e.g. punctuation) in linear time. */
export function trimTrailing(t: string, chars: string): string {
  let b = t.length;
  while (b > 0 && chars.includes(t[b - 1])) b--;
  return t.slice(0, b);
}

function trimChars(t: string, chars: string): string {
  let a = 0;
  let b = t.length;
  while (a < b && chars.includes(t[a])) a++;
  while (b > a && chars.includes(t[b - 1])) b--;
  return t.slice(a, b);
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
