// Multi-hop search QA in the style of Search-R1 / IGPO (one question) and MEM1 (a task made
// of N questions answered together). The knowledge base is generated: fictional people,
// companies, cities and countries linked by relations, one passage per entity, so no model
// can answer from memory and every answer is in the corpus. The agent calls a BM25 tool
// with search[query] and ends with answer[a1; a2; ...]. Reward: mean F1 (or exact match)
// over the questions; the gold answers are exposed for information-gain rewards (IGPO).
import { z } from "zod";
import type { AnchorValue } from "../credit/types";
import { BaseEnv, invalidInfo, type TurnOutcome } from "./base-env";
import { parseCommand } from "./parse-action";
import { createRng, mixSeed, type Rng } from "./rng";
import { Bm25Index, tokenize } from "./text-search";
import type { EnvSpec, EnvView } from "./types";

export const searchQaConfigSchema = z.strictObject({
  numObjectives: z.number().int().min(1).max(8).default(2).describe("Questions per task, answered together (MEM1's multi-objective tasks)."),
  hops: z.number().int().min(1).max(3).default(2).describe("Reasoning hops per question (searches needed to answer each)."),
  numPeople: z.number().int().min(10).max(2000).default(40).describe("Size of the knowledge base (people; companies, cities and countries scale with it)."),
  kbSeed: z.number().int().default(0).describe("Seed of the knowledge base (fixed across episodes, like a fixed corpus)."),
  topK: z.number().int().min(1).max(10).default(3).describe("Passages returned per search."),
  metric: z.enum(["f1", "em"]).default("f1").describe("Answer reward: token F1 or exact match, averaged over the questions."),
  maxTurns: z.number().int().min(1).max(100).default(10).describe("Turns (searches and the answer) before truncation."),
});
export type SearchQaConfig = z.infer<typeof searchQaConfigSchema>;

// ---------------------------------------------------------------------------------------
// Knowledge base.

type Kind = "person" | "company" | "city" | "country";
type Relation = "bornIn" | "worksFor" | "founder" | "hq" | "country" | "capital";

interface Entity {
  kind: Kind;
  name: string;
  rel: Partial<Record<Relation, number>>;
  /** Profession or industry, for the passage text. */
  role: string;
}

export interface Passage {
  id: number;
  title: string;
  text: string;
  /** Entity indices named in the passage (the passage's own entity first). */
  mentions: number[];
}

export interface KnowledgeBase {
  entities: Entity[];
  passages: Passage[];
}

const FIRST_NAMES =
  "Ada Bram Cleo Dario Edda Fenn Gia Hugo Ines Joss Kira Lev Mina Nils Orla Pax Quinn Rhea Sol Tova Ulla Vito Wren Xena Yusuf Zara Arlo Bea Cato Dina Elio Faye Gus Hana Ivo Juno Kai Lina Milo Nora".split(
    " ",
  );
const PROFESSIONS = ["chemist", "architect", "pilot", "novelist", "engineer", "surgeon", "painter", "economist", "botanist", "composer"];
const INDUSTRIES: [string, string][] = [
  ["Labs", "biotech"],
  ["Systems", "software"],
  ["Foods", "food"],
  ["Motors", "automotive"],
  ["Media", "media"],
  ["Energy", "energy"],
  ["Textiles", "textile"],
  ["Robotics", "robotics"],
];
const SYLLABLES = "ka lo ri ven tor mi sa dra bel un os kel mar fen ti ra vo zan quel pri do ha lun es gor ni ba sel tu rim".split(" ");

/** The knowledge base for a seed: entities with functional relations and one passage each. */
export function generateKnowledgeBase(numPeople: number, kbSeed: number): KnowledgeBase {
  const rng = createRng(mixSeed("searchqa-kb", kbSeed, numPeople));
  const used = new Set<string>();
  const word = (minSyl: number, maxSyl: number, suffix = ""): string => {
    for (let tries = 0; ; tries++) {
      // Short names run out in a large knowledge base: lengthen them after repeated clashes.
      const n = rng.range(minSyl, maxSyl) + Math.floor(tries / 20);
      const w = Array.from({ length: n }, () => rng.pick(SYLLABLES)).join("") + suffix;
      const cap = w.charAt(0).toUpperCase() + w.slice(1);
      if (!used.has(cap.toLowerCase()) && cap.length >= 4) {
        used.add(cap.toLowerCase());
        return cap;
      }
    }
  };
  const numCountries = Math.max(3, Math.ceil(numPeople / 7));
  const numCities = Math.max(numCountries * 2, Math.ceil(numPeople / 2.5));
  const numCompanies = Math.max(3, Math.ceil(numPeople / 3));
  const entities: Entity[] = [];
  const countries = Array.from(
    { length: numCountries },
    () => entities.push({ kind: "country", name: word(2, 2, rng.pick(["ia", "land", "mor", "stan"])), rel: {}, role: "" }) - 1,
  );
  const cities = Array.from({ length: numCities }, (_, i) => {
    const country = countries[i % numCountries]; // every country has cities
    return entities.push({ kind: "city", name: word(2, 3), rel: { country }, role: "" }) - 1;
  });
  for (const c of countries) entities[c].rel.capital = rng.pick(cities.filter((x) => entities[x].rel.country === c));
  const people: number[] = [];
  for (let i = 0; i < numPeople; i++) {
    const first = FIRST_NAMES[i % FIRST_NAMES.length];
    people.push(entities.push({ kind: "person", name: `${first} ${word(2, 3)}`, rel: { bornIn: rng.pick(cities) }, role: rng.pick(PROFESSIONS) }) - 1);
  }
  const companies = Array.from({ length: numCompanies }, () => {
    const [suffix, industry] = rng.pick(INDUSTRIES);
    return entities.push({ kind: "company", name: `${word(2, 2)} ${suffix}`, rel: { founder: rng.pick(people), hq: rng.pick(cities) }, role: industry }) - 1;
  });
  for (const p of people) entities[p].rel.worksFor = rng.pick(companies);

  const passages: Passage[] = entities.map((e, id) => {
    const n = (r: Relation) => entities[e.rel[r]!].name;
    const mentions = [id, ...Object.values(e.rel)] as number[];
    let text: string;
    switch (e.kind) {
      case "person":
        text = `${e.name} is a ${e.role} who was born in ${n("bornIn")}. ${e.name} works for ${n("worksFor")}.`;
        break;
      case "company":
        text = `${e.name} is a ${e.role} company founded by ${n("founder")}. ${e.name} is headquartered in ${n("hq")}.`;
        break;
      case "city": {
        const capitalOf = countries.find((c) => entities[c].rel.capital === id);
        text = `${e.name} is a city in ${n("country")}.${capitalOf !== undefined ? ` ${e.name} is the capital of ${entities[capitalOf].name}.` : ""}`;
        break;
      }
      case "country": {
        const some = cities.filter((c) => entities[c].rel.country === id).slice(0, 3);
        text = `${e.name} is a country. Its capital is ${n("capital")}. Cities in ${e.name} include ${some.map((c) => entities[c].name).join(", ")}.`;
        mentions.push(...some.filter((c) => !mentions.includes(c)));
        break;
      }
    }
    return { id, title: e.name, text, mentions };
  });
  return { entities, passages };
}

// Question templates: a start kind, a relation path, and the question text.
interface Template {
  start: Kind;
  path: Relation[];
  text: (name: string) => string;
}

const TEMPLATES: Record<number, Template[]> = {
  1: [
    { start: "person", path: ["bornIn"], text: (x) => `In which city was ${x} born?` },
    { start: "person", path: ["worksFor"], text: (x) => `Which company does ${x} work for?` },
    { start: "company", path: ["founder"], text: (x) => `Who founded ${x}?` },
    { start: "company", path: ["hq"], text: (x) => `In which city is ${x} headquartered?` },
    { start: "city", path: ["country"], text: (x) => `In which country is the city of ${x}?` },
    { start: "country", path: ["capital"], text: (x) => `What is the capital of ${x}?` },
  ],
  2: [
    { start: "person", path: ["bornIn", "country"], text: (x) => `In which country was ${x} born?` },
    { start: "company", path: ["founder", "bornIn"], text: (x) => `In which city was the founder of ${x} born?` },
    { start: "company", path: ["hq", "country"], text: (x) => `In which country is ${x} headquartered?` },
    { start: "person", path: ["worksFor", "founder"], text: (x) => `Who founded the company that ${x} works for?` },
    { start: "person", path: ["worksFor", "hq"], text: (x) => `In which city is the company that ${x} works for headquartered?` },
  ],
  3: [
    { start: "company", path: ["founder", "bornIn", "country"], text: (x) => `In which country was the founder of ${x} born?` },
    { start: "person", path: ["worksFor", "hq", "country"], text: (x) => `In which country is the company that ${x} works for headquartered?` },
    { start: "person", path: ["worksFor", "founder", "bornIn"], text: (x) => `In which city was the founder of the company that ${x} works for born?` },
  ],
};

export interface QaObjective {
  question: string;
  answer: string;
  /** Entity names along the reasoning chain, start entity first, answer last. */
  chain: string[];
}

export interface SearchQaState {
  objectives: QaObjective[];
  /** Passage ids retrieved so far, in first-seen order. */
  retrieved: number[];
}

// KB generation is the expensive part of a reset: share it between env instances.
const kbCache = new Map<string, KnowledgeBase>();
function knowledgeBase(numPeople: number, kbSeed: number): KnowledgeBase {
  const key = `${numPeople}:${kbSeed}`;
  let kb = kbCache.get(key);
  if (!kb) {
    if (kbCache.size > 16) kbCache.clear();
    kb = generateKnowledgeBase(numPeople, kbSeed);
    kbCache.set(key, kb);
  }
  return kb;
}

export class SearchQaEnv extends BaseEnv {
  readonly id = "searchqa";
  readonly kb: KnowledgeBase;
  private readonly index: Bm25Index;
  private objectives: QaObjective[] = [];
  private retrieved: number[] = [];
  private lastHits: number[] = [];
  private answerCandidates: string[] = [];

  constructor(readonly config: SearchQaConfig) {
    super(config.maxTurns);
    this.kb = knowledgeBase(config.numPeople, config.kbSeed);
    // The title is indexed twice so a name query ranks the entity's own passage first.
    this.index = new Bm25Index(this.kb.passages.map((p) => `${p.title} ${p.title} ${p.text}`));
  }

  get state(): SearchQaState {
    return { objectives: this.objectives.map((o) => ({ ...o, chain: o.chain.slice() })), retrieved: this.retrieved.slice() };
  }

  protected onReset(seed: number): string {
    const rng = createRng(mixSeed("searchqa-task", seed));
    this.objectives = makeObjectives(this.kb, this.config.numObjectives, this.config.hops, rng);
    this.retrieved = [];
    this.lastHits = [];
    this.answerCandidates = makeAnswerCandidates(this.kb, this.objectives, rng);
    const qs = this.objectives.map((o, i) => `${i + 1}. ${o.question}`);
    return `Answer the following question${qs.length > 1 ? "s" : ""}:\n${qs.join("\n")}`;
  }

  /** Passages for a query (what the search tool returns). */
  search(query: string): Passage[] {
    return this.index.search(query, this.config.topK).map((i) => this.kb.passages[i]);
  }

  protected onStep(actionText: string): TurnOutcome {
    const cmd = parseCommand(actionText, ["search", "answer"]);
    if (cmd === null || (cmd.verb === "search" && tokenize(cmd.arg).length === 0) || cmd.arg.trim() === "") {
      return {
        observation: "Invalid action. Use search[query] to search, or answer[...] to give your final answer.",
        reward: 0,
        done: false,
        info: invalidInfo(),
      };
    }
    if (cmd.verb === "search") {
      const query = cmd.arg.replace(/\s+/g, " ").slice(0, 300);
      const hits = this.search(query);
      this.lastHits = hits.map((p) => p.id);
      for (const p of hits) if (!this.retrieved.includes(p.id)) this.retrieved.push(p.id);
      const body = hits.length ? hits.map((p, i) => `Doc ${i + 1} (${p.title}): ${p.text}`).join("\n") : "No results.";
      return {
        observation: `<information>\n${body}\n</information>`,
        reward: 0,
        done: false,
        info: { valid: true, success: false, action: `search[${query}]` },
      };
    }
    const answers = splitAnswers(cmd.arg, this.objectives.length);
    const scores = this.objectives.map((o, i) => ({ f1: tokenF1(answers[i] ?? "", o.answer), em: exactMatch(answers[i] ?? "", o.answer) }));
    const mean = (k: "f1" | "em") => scores.reduce((s, x) => s + x[k], 0) / scores.length;
    const reward = Math.round(mean(this.config.metric) * 10000) / 10000;
    const success = scores.every((s) => s.em === 1);
    return {
      observation: `Your answer: ${answers.join("; ")}. ${success ? "All correct." : `Score: ${reward.toFixed(2)}.`}`,
      reward,
      done: true,
      info: { valid: true, success, action: `answer[${answers.join("; ")}]`, f1: mean("f1"), em: mean("em"), perObjectiveF1: scores.map((s) => s.f1) },
    };
  }

  admissibleActions(): null {
    return null; // free-text queries and answers
  }

  /**
   * Candidates for the random baseline: search[name] for each entity named in the questions
   * and in the last retrieved passages, plus four answer[...] candidates. Each question's
   * slot holds its gold answer in exactly one of the four (the others are entities of the
   * right kind), so a random answer is right about a quarter of the time per question.
   */
  sampleActions(): string[] {
    const names = new Set<string>(this.objectives.map((o) => o.chain[0]));
    for (const id of this.lastHits) for (const m of this.kb.passages[id].mentions) names.add(this.kb.entities[m].name);
    return [...[...names].map((n) => `search[${n}]`), ...this.answerCandidates];
  }

  goldAnswer(): string {
    return this.objectives.map((o) => o.answer).join("; ");
  }

  instructions(): string {
    const n = this.config.numObjectives;
    return [
      `Answer ${n > 1 ? `all ${n} questions` : "the question"} using a search engine over a knowledge base; you cannot know the answers beforehand.`,
      "Each turn, either search, e.g. <action>search[Brightwave Labs founder]</action>, which returns passages inside <information>...</information>,",
      `or give your final answer, e.g. <action>answer[${n > 1 ? Array.from({ length: n }, (_, i) => `answer ${i + 1}`).join("; ") : "your answer"}]</action>${n > 1 ? ", answers in question order separated by semicolons" : ""}.`,
      "Answers are names. The episode ends with your answer.",
      `Reward: the mean ${this.config.metric === "f1" ? "word-overlap F1" : "exact match"} of your answers with the correct ones.`,
    ].join("\n");
  }

  view(): EnvView {
    const lines = this.objectives.map((o, i) => `${i + 1}. ${o.question}\n   gold: ${o.answer}   chain: ${o.chain.join(" -> ")}`);
    lines.push("", `Retrieved passages (${this.retrieved.length}): ${this.retrieved.map((id) => this.kb.passages[id].title).join(", ") || "none"}`);
    return { kind: "text", text: lines.join("\n") };
  }

  /** The questions with their answers and reasoning chains (the knowledge base is the config's). */
  protected instanceState(): AnchorValue {
    return this.objectives.map((o) => ({ question: o.question, answer: o.answer, chain: o.chain }));
  }

  protected anchorState(): AnchorValue {
    // The information the agent holds: the set of passages it has read (order-free).
    return { retrieved: this.retrieved.slice().sort((a, b) => a - b) };
  }
}

function makeObjectives(kb: KnowledgeBase, n: number, hops: number, rng: Rng): QaObjective[] {
  const out: QaObjective[] = [];
  const seen = new Set<string>();
  for (let guard = 0; out.length < n && guard < 1000; guard++) {
    const t = rng.pick(TEMPLATES[hops]);
    const starts = kb.entities.map((e, i) => (e.kind === t.start ? i : -1)).filter((i) => i >= 0);
    const start = rng.pick(starts);
    const chain = [start];
    for (const r of t.path) chain.push(kb.entities[chain[chain.length - 1]].rel[r]!);
    const question = t.text(kb.entities[start].name);
    if (seen.has(question)) continue;
    seen.add(question);
    const names = chain.map((i) => kb.entities[i].name);
    out.push({ question, answer: names[names.length - 1], chain: names });
  }
  return out;
}

function makeAnswerCandidates(kb: KnowledgeBase, objectives: QaObjective[], rng: Rng): string[] {
  const slots = objectives.map((o) => {
    const kind = kb.entities.find((e) => e.name === o.answer)!.kind;
    const others = kb.entities.filter((e) => e.kind === kind && e.name !== o.answer).map((e) => e.name);
    return rng.shuffle([o.answer, ...rng.sample(others, 3)]);
  });
  return [0, 1, 2, 3].map((j) => `answer[${slots.map((s) => s[j % s.length]).join("; ")}]`);
}

/** "a; b", "a | b", "1. a\n2. b", "(1) a, (2) b" -> ["a", "b"]; a single question keeps the whole text. */
export function splitAnswers(text: string, n: number): string[] {
  if (n === 1) return [text.replace(/^\s*(?:\(?1[.):]\)?)\s*/, "").trim()];
  let parts = text.split(/\s*(?:;|\||\n)\s*/);
  if (parts.length < n) parts = text.split(/\s*(?:\(\d+\)|\b\d+[.):])\s*/).filter((p) => p.trim() !== "");
  if (parts.length < n) parts = text.split(/\s*,\s*/);
  return parts.map((p) => p.replace(/^\s*(?:\(?\d+[.):]\)?)\s*/, "").trim()).slice(0, n);
}

/** SQuAD answer normalisation: lower case, no punctuation, no articles, single spaces. */
export function normalizeAnswer(s: string): string {
  return s
    .toLowerCase()
    .replace(/[^a-z0-9 ]/g, " ")
    .replace(/\b(a|an|the)\b/g, " ")
    .replace(/\s+/g, " ")
    .trim();
}

export function exactMatch(pred: string, gold: string): number {
  return normalizeAnswer(pred) === normalizeAnswer(gold) ? 1 : 0;
}

/** SQuAD token F1 between a prediction and the gold answer. */
export function tokenF1(pred: string, gold: string): number {
  const p = normalizeAnswer(pred).split(" ").filter(Boolean);
  const g = normalizeAnswer(gold).split(" ").filter(Boolean);
  if (p.length === 0 || g.length === 0) return p.length === g.length ? 1 : 0;
  const counts = new Map<string, number>();
  for (const t of g) counts.set(t, (counts.get(t) ?? 0) + 1);
  let common = 0;
  for (const t of p) {
    const c = counts.get(t) ?? 0;
    if (c > 0) {
      common++;
      counts.set(t, c - 1);
    }
  }
  if (common === 0) return 0;
  const precision = common / p.length;
  const recall = common / g.length;
  return (2 * precision * recall) / (precision + recall);
}

export const searchQaSpec: EnvSpec<SearchQaConfig> = {
  id: "searchqa",
  title: "Search QA (multi-hop, multi-objective)",
  description:
    "Answer N multi-hop questions over a generated knowledge base with a BM25 search[query] tool, then answer[a1; a2] (Search-R1 / IGPO / MEM1). Reward: mean F1 or exact match; gold answers exposed.",
  configSchema: searchQaConfigSchema,
  create: (config) => new SearchQaEnv(config),
};
