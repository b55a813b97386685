// What the panel's attachment chips show, read in the browser (the webview tests' page, the real
// VS Code's chat frame): each chip as "ICON label", ICON the name of its codicon — "NO-ICON"
// unless the icon is drawn (an SVG with a path, of a visible size).
import type { Locator } from 'playwright-core';

interface Box {
  width: number;
  height: number;
}
interface ChipNode {
  querySelector(selector: string): { getAttribute(name: string): string | null; getBoundingClientRect(): Box; querySelector(selector: string): unknown } | null;
  textContent: string | null;
}

export function chips(locator: Locator): Promise<string[]> {
  return locator.evaluateAll((nodes: ChipNode[]) =>
    nodes.map((chip) => {
      const svg = chip.querySelector('svg.codicon');
      const box = svg?.getBoundingClientRect();
      const drawn = svg !== null && svg !== undefined && svg.querySelector('path') !== null && box !== undefined && box.width >= 8 && box.height >= 8;
      const name = drawn ? (/codicon-([\w-]+)/.exec(svg.getAttribute('class') ?? '')?.[1] ?? 'NO-ICON') : 'NO-ICON';
      return `${name} ${(chip.textContent ?? '').replace('✕', '').trim()}`;
    }),
  );
}
