// A household in the style of ALFWorld (Shridhar et al. 2021; the text side of GiGPO's
// benchmark): rooms with receptacles (some to open), objects in them, and six task types:
// pick-and-place, pick-two, clean / heat / cool then place, and examine in light.
// Commands and replies follow ALFWorld's TextWorld wording ("go to countertop 1",
// "take apple 1 from countertop 1", "move apple 1 to fridge 1", "Nothing happens.").
// Extension over ALFWorld: several rooms; "go to <room>" moves between them and
// "go to <receptacle>" reaches receptacles of the current room.
import { z } from "zod";
import type { AnchorValue } from "../credit/types";
import { BaseEnv, invalidInfo, type TurnOutcome } from "./base-env";
import { matchAction } from "./parse-action";
import { createRng, mixSeed, type Rng } from "./rng";
import type { EnvSpec, EnvView } from "./types";

export const HOUSEHOLD_TASK_TYPES = ["pick_and_place", "pick_two", "clean_then_place", "heat_then_place", "cool_then_place", "examine_in_light"] as const;
export type HouseholdTaskType = (typeof HOUSEHOLD_TASK_TYPES)[number];

export const householdConfigSchema = z.strictObject({
  numRooms: z.number().int().min(1).max(4).default(1).describe("Rooms in the house (1 is ALFWorld's single room; more rooms mean longer walks)."),
  objectsPerRoom: z.number().int().min(3).max(20).default(8).describe("Objects placed in each room besides the lamps."),
  taskTypes: z
    .array(z.enum(HOUSEHOLD_TASK_TYPES))
    .min(1)
    .default([...HOUSEHOLD_TASK_TYPES])
    .describe("Task types to draw from (a type the generated house cannot support is skipped)."),
  maxTurns: z.number().int().min(1).max(500).default(50).describe("Turns before the episode is truncated (GiGPO uses 50 for ALFWorld)."),
});
export type HouseholdConfig = z.infer<typeof householdConfigSchema>;

// ---------------------------------------------------------------------------------------
// The world catalogue.

const ROOMS = ["kitchen", "livingroom", "bedroom", "bathroom"] as const;
type Room = (typeof ROOMS)[number];

interface ReceptacleType {
  rooms: Room[];
  openable: boolean;
  /** The most instances per room (at least one is placed in each room listed). */
  max: number;
}

const RECEPTACLE_TYPES: Record<string, ReceptacleType> = {
  countertop: { rooms: ["kitchen", "bathroom"], openable: false, max: 2 },
  cabinet: { rooms: ["kitchen", "bathroom"], openable: true, max: 3 },
  drawer: { rooms: ["kitchen", "bedroom"], openable: true, max: 2 },
  fridge: { rooms: ["kitchen"], openable: true, max: 1 },
  microwave: { rooms: ["kitchen"], openable: true, max: 1 },
  sinkbasin: { rooms: ["kitchen", "bathroom"], openable: false, max: 1 },
  stoveburner: { rooms: ["kitchen"], openable: false, max: 2 },
  diningtable: { rooms: ["kitchen"], openable: false, max: 1 },
  garbagecan: { rooms: ["kitchen", "bathroom"], openable: false, max: 1 },
  shelf: { rooms: ["livingroom", "bedroom"], openable: false, max: 2 },
  sofa: { rooms: ["livingroom"], openable: false, max: 1 },
  coffeetable: { rooms: ["livingroom"], openable: false, max: 1 },
  sidetable: { rooms: ["livingroom", "bedroom"], openable: false, max: 1 },
  tvstand: { rooms: ["livingroom"], openable: false, max: 1 },
  armchair: { rooms: ["livingroom"], openable: false, max: 1 },
  bed: { rooms: ["bedroom"], openable: false, max: 1 },
  desk: { rooms: ["bedroom"], openable: false, max: 1 },
  dresser: { rooms: ["bedroom"], openable: false, max: 1 },
  safe: { rooms: ["bedroom"], openable: true, max: 1 },
  toilet: { rooms: ["bathroom"], openable: false, max: 1 },
  towelholder: { rooms: ["bathroom"], openable: false, max: 1 },
  bathtubbasin: { rooms: ["bathroom"], openable: false, max: 1 },
};

/** Appliances that change an object (ALFWorld: sinkbasin cleans, microwave heats, fridge cools). */
const APPLIANCE = { clean: "sinkbasin", heat: "microwave", cool: "fridge" } as const;
type Treatment = keyof typeof APPLIANCE;

interface ObjectType {
  places: string[];
  /** c clean, h heat, k cool, e examine in light. */
  can: string;
}

const OBJECT_TYPES: Record<string, ObjectType> = {
  apple: { places: ["countertop", "fridge", "diningtable", "garbagecan"], can: "chk" },
  bread: { places: ["countertop", "diningtable", "fridge", "cabinet"], can: "hk" },
  egg: { places: ["countertop", "fridge", "diningtable", "garbagecan"], can: "hk" },
  potato: { places: ["countertop", "fridge", "diningtable", "cabinet"], can: "chk" },
  tomato: { places: ["countertop", "fridge", "diningtable"], can: "chk" },
  lettuce: { places: ["countertop", "fridge", "diningtable"], can: "ck" },
  mug: { places: ["countertop", "cabinet", "diningtable", "shelf", "desk"], can: "chk" },
  cup: { places: ["countertop", "cabinet", "diningtable", "fridge", "shelf"], can: "chk" },
  plate: { places: ["countertop", "cabinet", "diningtable", "fridge"], can: "chk" },
  bowl: { places: ["countertop", "cabinet", "diningtable", "shelf", "fridge"], can: "cke" },
  pan: { places: ["stoveburner", "countertop", "cabinet"], can: "ck" },
  pot: { places: ["stoveburner", "countertop", "cabinet"], can: "ck" },
  knife: { places: ["countertop", "drawer", "diningtable"], can: "c" },
  spoon: { places: ["countertop", "drawer", "diningtable"], can: "c" },
  fork: { places: ["countertop", "drawer", "diningtable"], can: "c" },
  spatula: { places: ["countertop", "drawer"], can: "c" },
  soapbar: { places: ["countertop", "toilet", "cabinet", "bathtubbasin"], can: "c" },
  cloth: { places: ["countertop", "cabinet", "bathtubbasin", "towelholder"], can: "c" },
  soapbottle: { places: ["countertop", "cabinet", "toilet"], can: "" },
  toiletpaper: { places: ["toilet", "cabinet", "countertop"], can: "" },
  book: { places: ["desk", "bed", "shelf", "sidetable", "sofa", "coffeetable", "dresser"], can: "e" },
  cd: { places: ["desk", "drawer", "shelf", "safe", "dresser"], can: "e" },
  cellphone: { places: ["bed", "desk", "sofa", "sidetable", "dresser", "drawer"], can: "e" },
  keychain: { places: ["sidetable", "dresser", "coffeetable", "drawer", "safe", "sofa"], can: "e" },
  pen: { places: ["desk", "drawer", "shelf", "sidetable"], can: "e" },
  pencil: { places: ["desk", "drawer", "shelf", "sidetable"], can: "e" },
  alarmclock: { places: ["desk", "dresser", "shelf", "sidetable"], can: "e" },
  creditcard: { places: ["desk", "dresser", "sofa", "coffeetable", "drawer", "armchair"], can: "e" },
  remotecontrol: { places: ["sofa", "coffeetable", "tvstand", "sidetable", "armchair"], can: "e" },
  pillow: { places: ["bed", "sofa", "armchair"], can: "e" },
  vase: { places: ["shelf", "coffeetable", "sidetable", "tvstand", "diningtable"], can: "e" },
  statue: { places: ["shelf", "coffeetable", "sidetable", "dresser"], can: "e" },
  laptop: { places: ["bed", "desk", "sofa", "coffeetable"], can: "e" },
  watch: { places: ["dresser", "sidetable", "desk", "safe", "drawer"], can: "e" },
};

const LAMP_PLACES = ["desk", "sidetable", "dresser"];

// ---------------------------------------------------------------------------------------
// State.

export interface HouseholdReceptacle {
  id: string;
  type: string;
  room: Room;
  openable: boolean;
  open: boolean;
}

export interface HouseholdObject {
  id: string;
  type: string;
  /** Receptacle id, or "agent" when held. */
  loc: string;
  clean: boolean;
  hot: boolean;
  cool: boolean;
  /** Desk lamps: not takeable; `on` after "use". */
  lamp: boolean;
  on: boolean;
}

export interface HouseholdTask {
  type: HouseholdTaskType;
  objectType: string;
  /** Receptacle type to place into (null for examine_in_light). */
  targetType: string | null;
  text: string;
}

export interface HouseholdState {
  rooms: Room[];
  receptacles: HouseholdReceptacle[];
  objects: HouseholdObject[];
  room: Room;
  /** Receptacle the agent stands at, null in the middle of a room. */
  at: string | null;
  holding: string | null;
  task: HouseholdTask;
}

type Command =
  | { kind: "look" | "inventory" }
  | { kind: "goto"; target: string }
  | { kind: "open" | "close" | "examine"; target: string }
  | { kind: "take"; obj: string; from: string }
  | { kind: "move"; obj: string; to: string }
  | { kind: "treat"; how: Treatment; obj: string; with: string }
  | { kind: "use"; lamp: string };

export class HouseholdEnv extends BaseEnv {
  readonly id = "household";
  private s!: HouseholdState;

  constructor(readonly config: HouseholdConfig) {
    super(config.maxTurns);
  }

  /** A deep copy of the world (tests and solvers read it). */
  get state(): HouseholdState {
    return structuredClone(this.s);
  }

  protected onReset(seed: number): string {
    this.s = generateHousehold(this.config, seed);
    const r = this.s.room;
    const others = this.s.rooms.filter((x) => x !== r);
    return [
      `You are in the ${r}. Looking quickly around you, you see ${listText(this.receptaclesIn(r).map((x) => x.id))}.`,
      others.length ? `From here you can go to: ${others.join(", ")}.` : "",
      "",
      `Your task is to: ${this.s.task.text}`,
    ]
      .filter((l, i) => l !== "" || i === 2)
      .join("\n");
  }

  protected onStep(actionText: string): TurnOutcome {
    const commands = this.commands();
    const text = matchAction(actionText, [...commands.keys()], this.aliases(commands));
    if (text === null) return { observation: "Nothing happens.", reward: 0, done: false, info: invalidInfo() };
    const observation = this.apply(commands.get(text)!);
    const success = this.taskDone();
    return { observation, reward: success ? 1 : 0, done: success, info: { valid: true, success, action: text } };
  }

  admissibleActions(): string[] {
    return [...this.commands().keys()];
  }

  instructions(): string {
    return [
      "You are a household agent. Interact with the house by text commands to solve the task you are given.",
      "Commands: look, inventory, go to [receptacle or room], open [receptacle], close [receptacle],",
      "take [object] from [receptacle], move [object] to [receptacle], examine [object or receptacle],",
      "clean [object] with [sinkbasin], heat [object] with [microwave], cool [object] with [fridge], use [lamp].",
      "You can carry one object at a time. Closed receptacles must be opened to see or use their contents.",
      "Each turn, answer with one command, e.g. <action>go to countertop 1</action>.",
      "Reward: 1 when the task is complete, 0 otherwise.",
    ].join("\n");
  }

  view(): EnvView {
    const lines = [
      `Task: ${this.s.task.text}`,
      `Location: ${this.s.room}${this.s.at ? `, at ${this.s.at}` : ""}`,
      `Holding: ${this.s.holding ?? "nothing"}`,
      "",
    ];
    for (const room of this.s.rooms) {
      lines.push(`[${room}]`);
      for (const r of this.receptaclesIn(room)) {
        const contents = this.objectsIn(r.id).map((o) => o.id + flagText(o));
        lines.push(`  ${r.id}${r.openable ? (r.open ? " (open)" : " (closed)") : ""}: ${contents.join(", ") || "-"}`);
      }
    }
    return { kind: "text", text: lines.join("\n") };
  }

  /** The generated house (rooms, receptacles, objects and their places) and the task. */
  protected instanceState(): AnchorValue {
    return JSON.parse(JSON.stringify(this.s)) as AnchorValue;
  }

  protected anchorState(): AnchorValue {
    return {
      room: this.s.room,
      at: this.s.at,
      holding: this.s.holding,
      open: this.s.receptacles.filter((r) => r.open).map((r) => r.id),
      objects: this.s.objects.map((o) => `${o.id}@${o.loc}${flagText(o)}`),
    };
  }

  // -------------------------------------------------------------------------------------
  // Commands: the admissible ones are generated from the state, ALFWorld-style.

  private commands(): Map<string, Command> {
    const s = this.s;
    const cmds = new Map<string, Command>();
    cmds.set("look", { kind: "look" });
    cmds.set("inventory", { kind: "inventory" });
    for (const r of this.receptaclesIn(s.room)) if (r.id !== s.at) cmds.set(`go to ${r.id}`, { kind: "goto", target: r.id });
    for (const room of s.rooms) if (room !== s.room) cmds.set(`go to ${room}`, { kind: "goto", target: room });
    const held = s.holding ? this.obj(s.holding) : null;
    if (held) cmds.set(`examine ${held.id}`, { kind: "examine", target: held.id });
    const at = s.at ? this.recep(s.at) : null;
    if (at) {
      cmds.set(`examine ${at.id}`, { kind: "examine", target: at.id });
      if (at.openable) cmds.set(`${at.open ? "close" : "open"} ${at.id}`, { kind: at.open ? "close" : "open", target: at.id });
      const reachable = !at.openable || at.open;
      if (reachable) {
        for (const o of this.objectsIn(at.id)) {
          if (o.lamp) cmds.set(`use ${o.id}`, { kind: "use", lamp: o.id });
          else if (!held) cmds.set(`take ${o.id} from ${at.id}`, { kind: "take", obj: o.id, from: at.id });
        }
        if (held) cmds.set(`move ${held.id} to ${at.id}`, { kind: "move", obj: held.id, to: at.id });
      }
      if (held) {
        for (const how of Object.keys(APPLIANCE) as Treatment[])
          if (at.type === APPLIANCE[how]) cmds.set(`${how} ${held.id} with ${at.id}`, { kind: "treat", how, obj: held.id, with: at.id });
      }
    }
    return new Map([...cmds].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  }

  /** Other spellings agents use: ALFWorld's older "put X in/on Y", "pick up X". */
  private aliases(commands: Map<string, Command>): Record<string, string> {
    const out: Record<string, string> = {};
    for (const [text, c] of commands) {
      if (c.kind === "move") {
        for (const p of ["in", "on", "in/on", "into", "onto"]) out[`put ${c.obj} ${p} ${c.to}`] = text;
        out[`place ${c.obj} ${c.to}`] = text;
      }
      if (c.kind === "take") {
        out[`take ${c.obj}`] = text;
        out[`pick up ${c.obj}`] = text;
        out[`pick up ${c.obj} from ${c.from}`] = text;
      }
      if (c.kind === "goto") out[`goto ${c.target}`] = text;
      if (c.kind === "use") out[`turn on ${c.lamp}`] = text;
      if (c.kind === "look") out["look around"] = text;
      if (c.kind === "inventory") out.i = text;
    }
    return out;
  }

  private apply(c: Command): string {
    const s = this.s;
    switch (c.kind) {
      case "look": {
        const place = s.at ? `You are facing the ${s.at}, in the ${s.room}.` : `You are in the middle of the ${s.room}.`;
        return `${place} Looking quickly around you, you see ${listText(this.receptaclesIn(s.room).map((r) => r.id))}.`;
      }
      case "inventory":
        return s.holding ? `You are carrying: ${article(s.holding)}.` : "You are not carrying anything.";
      case "goto": {
        if ((ROOMS as readonly string[]).includes(c.target)) {
          s.room = c.target as Room;
          s.at = null;
          return `You go to the ${s.room}. Looking quickly around you, you see ${listText(this.receptaclesIn(s.room).map((r) => r.id))}.`;
        }
        s.at = c.target;
        return `You arrive at ${c.target}. ${this.describe(this.recep(c.target))}`;
      }
      case "open": {
        const r = this.recep(c.target);
        r.open = true;
        const inside = this.objectsIn(r.id).map((o) => o.id);
        return `You open the ${r.id}. The ${r.id} is open. In it, you see ${inside.length ? listText(inside) : "nothing"}.`;
      }
      case "close":
        this.recep(c.target).open = false;
        return `You close the ${c.target}.`;
      case "examine": {
        if (c.target === s.holding) {
          const o = this.obj(c.target);
          const st = [o.clean && "clean", o.hot && "hot", o.cool && "cool"].filter(Boolean);
          return st.length ? `This is a ${st.join(" and ")} ${o.id}.` : `There's nothing special about ${o.id}.`;
        }
        return this.describe(this.recep(c.target));
      }
      case "take":
        this.obj(c.obj).loc = "agent";
        s.holding = c.obj;
        return `You pick up the ${c.obj} from the ${c.from}.`;
      case "move":
        this.obj(c.obj).loc = c.to;
        s.holding = null;
        return `You move the ${c.obj} to the ${c.to}.`;
      case "treat": {
        const o = this.obj(c.obj);
        if (c.how === "clean") o.clean = true;
        if (c.how === "heat") [o.hot, o.cool] = [true, false];
        if (c.how === "cool") [o.cool, o.hot] = [true, false];
        return `You ${c.how} the ${o.id} using the ${c.with}.`;
      }
      case "use": {
        const lamp = this.obj(c.lamp);
        lamp.on = !lamp.on;
        return `You turn ${lamp.on ? "on" : "off"} the ${lamp.id}.`;
      }
    }
  }

  private describe(r: HouseholdReceptacle): string {
    if (r.openable && !r.open) return `The ${r.id} is closed.`;
    const inside = this.objectsIn(r.id).map((o) => o.id);
    const prep = r.openable || ["sinkbasin", "garbagecan", "bathtubbasin"].includes(r.type) ? "In" : "On";
    return `${prep} the ${r.id}, you see ${inside.length ? listText(inside) : "nothing"}.`;
  }

  private taskDone(): boolean {
    const { task, objects, holding, at } = this.s;
    if (task.type === "examine_in_light") {
      const held = holding ? this.obj(holding) : null;
      return !!held && held.type === task.objectType && !!at && objects.some((o) => o.lamp && o.on && o.loc === at);
    }
    const need = task.type === "pick_two" ? 2 : 1;
    const placed = objects.filter(
      (o) => o.type === task.objectType && o.loc !== "agent" && this.recep(o.loc).type === task.targetType && satisfies(o, task.type),
    );
    return placed.length >= need;
  }

  private receptaclesIn(room: Room): HouseholdReceptacle[] {
    return this.s.receptacles.filter((r) => r.room === room);
  }

  private objectsIn(recepId: string): HouseholdObject[] {
    return this.s.objects.filter((o) => o.loc === recepId);
  }

  private recep(id: string): HouseholdReceptacle {
    return this.s.receptacles.find((r) => r.id === id)!;
  }

  private obj(id: string): HouseholdObject {
    return this.s.objects.find((o) => o.id === id)!;
  }
}

function satisfies(o: HouseholdObject, type: HouseholdTaskType): boolean {
  if (type === "clean_then_place") return o.clean;
  if (type === "heat_then_place") return o.hot;
  if (type === "cool_then_place") return o.cool;
  return true;
}

function flagText(o: HouseholdObject): string {
  const f = [o.clean && "clean", o.hot && "hot", o.cool && "cool", o.lamp && o.on && "on"].filter(Boolean);
  return f.length ? ` (${f.join(", ")})` : "";
}

function article(id: string): string {
  return `a ${id}`; // ALFWorld writes "a apple 1"; kept for fidelity with its transcripts
}

/** "a x 1", "a x 1 and a y 2", "a x 1, a y 2, and a z 3" (ALFWorld's list style). */
function listText(ids: string[]): string {
  const items = ids.map(article);
  if (items.length <= 1) return items[0] ?? "nothing";
  if (items.length === 2) return `${items[0]} and ${items[1]}`;
  return `${items.slice(0, -1).join(", ")}, and ${items[items.length - 1]}`;
}

// ---------------------------------------------------------------------------------------
// Generation.

/** A house and a task it can support; retries with derived seeds in the rare case of none. */
export function generateHousehold(config: HouseholdConfig, seed: number): HouseholdState {
  for (let attempt = 0; attempt < 1000; attempt++) {
    const rng = createRng(mixSeed("household", seed, attempt));
    const state = tryGenerate(config, rng);
    if (state) return state;
  }
  throw new Error("household: no feasible task for this configuration");
}

function tryGenerate(config: HouseholdConfig, rng: Rng): HouseholdState | null {
  const rooms = rng.sample(ROOMS, config.numRooms);
  // Receptacles, numbered per type across the house ("cabinet 1".."cabinet 5").
  const receptacles: HouseholdReceptacle[] = [];
  const counter = new Map<string, number>();
  const next = (type: string) => {
    const n = (counter.get(type) ?? 0) + 1;
    counter.set(type, n);
    return `${type} ${n}`;
  };
  for (const room of rooms)
    for (const [type, t] of Object.entries(RECEPTACLE_TYPES)) {
      if (!t.rooms.includes(room)) continue;
      const n = rng.range(1, t.max);
      for (let i = 0; i < n; i++) receptacles.push({ id: next(type), type, room, openable: t.openable, open: false });
    }

  const objects: HouseholdObject[] = [];
  const newObject = (type: string, loc: string, lamp = false): HouseholdObject => ({
    id: next(type),
    type,
    loc,
    clean: false,
    hot: false,
    cool: false,
    lamp,
    on: false,
  });
  for (const room of rooms) {
    const here = receptacles.filter((r) => r.room === room);
    const lampSpots = here.filter((r) => LAMP_PLACES.includes(r.type));
    if (lampSpots.length) objects.push(newObject("desklamp", rng.pick(lampSpots).id, true));
    const types = Object.keys(OBJECT_TYPES).filter((t) => here.some((r) => OBJECT_TYPES[t].places.includes(r.type)));
    for (let k = 0; k < config.objectsPerRoom; k++) {
      const type = rng.pick(types);
      const spots = here.filter((r) => OBJECT_TYPES[type].places.includes(r.type));
      objects.push(newObject(type, rng.pick(spots).id));
    }
  }

  const task = pickTask(config, rng, receptacles, objects);
  if (!task) return null;
  return { rooms, receptacles, objects, room: rooms[0], at: null, holding: null, task };
}

function pickTask(config: HouseholdConfig, rng: Rng, receptacles: HouseholdReceptacle[], objects: HouseholdObject[]): HouseholdTask | null {
  const present = new Set(receptacles.map((r) => r.type));
  const typeOf = (loc: string) => receptacles.find((r) => r.id === loc)!.type;
  const byType = new Map<string, HouseholdObject[]>();
  for (const o of objects) if (!o.lamp) byType.set(o.type, [...(byType.get(o.type) ?? []), o]);
  const hasLamp = objects.some((o) => o.lamp);

  const options = new Map<HouseholdTaskType, HouseholdTask[]>();
  for (const type of config.taskTypes) {
    const list: HouseholdTask[] = [];
    for (const [objType, instances] of byType) {
      const cap = OBJECT_TYPES[objType].can;
      if (type === "examine_in_light") {
        if (cap.includes("e") && hasLamp) list.push({ type, objectType: objType, targetType: null, text: `examine the ${objType} with the desklamp.` });
        continue;
      }
      const treatment: Treatment | null =
        type === "clean_then_place" ? "clean" : type === "heat_then_place" ? "heat" : type === "cool_then_place" ? "cool" : null;
      if (treatment && (!cap.includes(treatment === "clean" ? "c" : treatment === "heat" ? "h" : "k") || !present.has(APPLIANCE[treatment]))) continue;
      const need = type === "pick_two" ? 2 : 1;
      for (const target of OBJECT_TYPES[objType].places) {
        if (!present.has(target) || (treatment && target === APPLIANCE[treatment])) continue;
        // Enough instances start elsewhere, so the task is never solved at reset.
        if (instances.filter((o) => typeOf(o.loc) !== target).length < need) continue;
        if (instances.some((o) => typeOf(o.loc) === target)) continue;
        const prep = RECEPTACLE_TYPES[target].openable || ["sinkbasin", "garbagecan", "bathtubbasin"].includes(target) ? "in" : "on";
        const text =
          type === "pick_two"
            ? `put two ${objType} ${prep} ${target}.`
            : `put a ${treatment ? { clean: "clean", heat: "hot", cool: "cool" }[treatment] + " " : ""}${objType} ${prep} ${target}.`;
        list.push({ type, objectType: objType, targetType: target, text });
      }
    }
    if (list.length) options.set(type, list);
  }
  if (options.size === 0) return null;
  const type = rng.pick([...options.keys()]);
  return rng.pick(options.get(type)!);
}

export const householdSpec: EnvSpec<HouseholdConfig> = {
  id: "household",
  title: "Household (ALFWorld-style)",
  description:
    "Text household with rooms, receptacles and objects; tasks: pick-and-place, pick-two, clean/heat/cool then place, examine in light. ALFWorld's command set and admissible-command list. Reward 1 on success.",
  configSchema: householdConfigSchema,
  create: (config) => new HouseholdEnv(config),
};
