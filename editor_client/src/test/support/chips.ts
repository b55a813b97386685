// What the panel's attachment chips show, read in the browser (the webview tests' page, the real
// VS Code's chat frame): each chip as "ICON label", ICON its codicon's name.
import type { Frame, Locator, Page } from 'playwright-core';

interface ChipNode {
  querySelector(selector: string): { className: string } | null;
  textContent: string | null;
}

export function chips(locator: Locator): Promise<string[]> {
  return locator.evaluateAll((nodes: ChipNode[]) =>
    nodes.map((chip) => {
      const name = /codicon-([\w-]+)/.exec(chip.querySelector('.codicon')?.className ?? '')?.[1] ?? 'NO-ICON';
      return `${name} ${(chip.textContent ?? '').replace('✕', '').trim()}`;
    }),
  );
}

/** The codicon font is loaded (from the extension's files, through the CSP) once the fonts used settle. */
export function iconFontLoaded(where: Page | Frame): Promise<boolean> {
  return where.evaluate(async () => {
    const fonts = (globalThis as unknown as { document: { fonts: Iterable<{ family: string; status: string }> & { ready: Promise<unknown> } } }).document.fonts;
    await fonts.ready;
    return [...fonts].some((face) => face.family.replace(/"/g, '') === 'codicon' && face.status === 'loaded');
  });
}
