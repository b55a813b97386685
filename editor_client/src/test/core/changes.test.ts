// The before/after of a write or edit, for its diff (changes.ts).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { computeChange } from '../../core/changes';

describe('the change a write or edit makes (diff)', () => {
  it('write_file: the file before and the content; edit_file: the whole file with the edit, else the fragment', () => {
    assert.deepEqual(computeChange('write_file', { path: 'a.txt', content: 'new\n' }, 'old\n'), { path: 'a.txt', before: 'old\n', after: 'new\n', wholeFile: true });
    assert.deepEqual(computeChange('write_file', { path: 'a.txt', content: 'new\n' }, undefined), { path: 'a.txt', before: '', after: 'new\n', wholeFile: true });
    assert.deepEqual(computeChange('edit_file', { path: 'a.py', old_string: 'x = 1', new_string: 'x = $&2' }, 'a\nx = 1\nb\n'), {
      path: 'a.py',
      before: 'a\nx = 1\nb\n',
      after: 'a\nx = $&2\nb\n',
      wholeFile: true,
    });
    assert.deepEqual(computeChange('edit_file', { path: 'a.py', old_string: 'x = 1', new_string: 'x = 2' }, undefined), {
      path: 'a.py',
      before: 'x = 1',
      after: 'x = 2',
      wholeFile: false,
    });
    assert.equal(computeChange('read_file', { path: 'a' }, undefined), undefined);
  });
});
