// Readability of the panel in a theme, from the computed colours of what it shows: each text's
// WCAG contrast against the background it is drawn on (the element's and its ancestors'
// backgrounds composited), and whether a bubble or a code chip stands out from the panel.
import type { Frame } from 'playwright-core';

/** What is measured: a text (contrast of its colour on its background), or a shape (its fill or border against what is behind it). */
export interface Probe {
  name: string;
  selector: string;
  /** The least WCAG contrast the text needs (4.5: body text; 3: large, muted or status text). */
  text?: number;
  /** The least contrast the element's fill, or its border, needs against what is behind it. */
  shape?: number;
}

export interface Measure {
  name: string;
  found: boolean;
  color: string;
  background: string;
  contrast: number;
  /** For a shape: the fill's contrast and the border's against what is behind the element. */
  fill?: number;
  border?: number;
}

type Rgba = [number, number, number, number];

/** rgb()/rgba() or color(srgb …) as computed by Chromium, 0–255 channels and alpha 0–1. */
export function parseColor(value: string): Rgba {
  const srgb = /^color\(srgb ([\d.e+-]+) ([\d.e+-]+) ([\d.e+-]+)(?: \/ ([\d.e+-]+))?\)$/.exec(value);
  if (srgb) return [Number(srgb[1]) * 255, Number(srgb[2]) * 255, Number(srgb[3]) * 255, srgb[4] === undefined ? 1 : Number(srgb[4])];
  const rgb = /^rgba?\(([\d.]+),? ([\d.]+),? ([\d.]+)(?:[,/] ?([\d.]+))?\)$/.exec(value);
  if (rgb) return [Number(rgb[1]), Number(rgb[2]), Number(rgb[3]), rgb[4] === undefined ? 1 : Number(rgb[4])];
  throw new Error(`a colour this check cannot read: ${value}`);
}

/** `top` drawn over the opaque `bottom`. */
export function over(top: Rgba, bottom: Rgba): Rgba {
  const a = top[3];
  return [top[0] * a + bottom[0] * (1 - a), top[1] * a + bottom[1] * (1 - a), top[2] * a + bottom[2] * (1 - a), 1];
}

function luminance([r, g, b]: Rgba): number {
  const channel = (c: number) => {
    const s = c / 255;
    return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
  };
  return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b);
}

export function contrast(a: Rgba, b: Rgba): number {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x) as [number, number];
  return (hi + 0.05) / (lo + 0.05);
}

/** The computed colours of each probe's first element: its text colour and the backgrounds from it up to the page. */
export async function measure(frame: Frame, probes: Probe[]): Promise<Measure[]> {
  const raw = await frame.evaluate((list) => {
    interface Styles {
      color: string;
      backgroundColor: string;
      borderTopColor: string;
      borderTopWidth: string;
    }
    const win = globalThis as unknown as {
      document: { querySelector(s: string): { parentElement: unknown } | null; documentElement: unknown };
      getComputedStyle(e: unknown): Styles;
    };
    return list.map((probe) => {
      const node = win.document.querySelector(probe.selector);
      if (node === null) return { name: probe.name, found: false, color: '', borderColor: '', borderWidth: '', backgrounds: [] as string[] };
      const own = win.getComputedStyle(node);
      const backgrounds: string[] = [];
      for (let at: { parentElement: unknown } | null = node; at !== null; at = at.parentElement as { parentElement: unknown } | null) {
        backgrounds.push(win.getComputedStyle(at).backgroundColor);
      }
      return { name: probe.name, found: true, color: own.color, borderColor: own.borderTopColor, borderWidth: own.borderTopWidth, backgrounds };
    });
  }, probes);
  return raw.map((r) => {
    if (!r.found) return { name: r.name, found: false, color: '', background: '', contrast: 0 };
    // Composite from the page up: the bottom-most opaque background, then each one above it.
    let behind: Rgba = [255, 255, 255, 1];
    const layers = r.backgrounds.map(parseColor).reverse();
    const composited: Rgba[] = [];
    for (const layer of layers) {
      behind = over(layer, behind);
      composited.push(behind);
    }
    const background = composited.at(-1) ?? behind;
    const parent = composited.at(-2) ?? background;
    const text = over(parseColor(r.color), background);
    const result: Measure = { name: r.name, found: true, color: r.color, background: `rgb(${background.slice(0, 3).map(Math.round).join(', ')})`, contrast: contrast(text, background) };
    result.fill = contrast(background, parent);
    result.border = parseFloat(r.borderWidth) > 0 ? contrast(over(parseColor(r.borderColor), parent), parent) : 1;
    return result;
  });
}

/** What is not readable (empty: everything is). */
export function unreadable(probes: Probe[], measures: Measure[]): string[] {
  const problems: string[] = [];
  for (const probe of probes) {
    const m = measures.find((x) => x.name === probe.name);
    if (m === undefined || !m.found) {
      problems.push(`${probe.name}: nothing matches ${probe.selector}`);
      continue;
    }
    if (probe.text !== undefined && m.contrast < probe.text) {
      problems.push(`${probe.name}: text ${m.color} on ${m.background} is ${m.contrast.toFixed(2)}:1, needs ${probe.text}:1`);
    }
    if (probe.shape !== undefined && Math.max(m.fill ?? 1, m.border ?? 1) < probe.shape) {
      problems.push(`${probe.name}: does not stand out from the panel (fill ${(m.fill ?? 1).toFixed(2)}:1, border ${(m.border ?? 1).toFixed(2)}:1, needs ${probe.shape}:1)`);
    }
  }
  return problems;
}
