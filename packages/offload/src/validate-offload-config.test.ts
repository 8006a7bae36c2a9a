import { existsSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { useTempDir } from '@soup/test-utils';
import { describe, expect, test } from 'vitest';
import { checkOffloadConfig } from './check-offload-config';
import { validateOffloadConfig } from './validate-offload-config';

const UNSLOTH =
  'Activation offloading is not compatible with the unsloth backend. Unsloth manages its own memory. Use backend: ' +
  'transformers.';
const MLX = 'Activation offloading is not supported on the mlx backend. Use backend: transformers.';
const NO_SAVE_DIR =
  "activation_offloading='disk' requires a save_dir (scratch directory for offloaded activation tensors).";

describe('validateOffloadConfig — the original cases', () => {
  test('disabled (target null / undefined) is valid whatever the rest says', () => {
    expect(validateOffloadConfig({ target: null, backend: 'unsloth', device: 'cpu' })).toEqual([]);
    expect(validateOffloadConfig({ target: undefined, backend: 'mlx', device: 'mps' })).toEqual([]);
  });

  test('unsloth is refused with the original message, and only that', () => {
    expect(validateOffloadConfig({ target: 'cpu', backend: 'unsloth', device: 'cuda' })).toEqual([UNSLOTH]);
    expect(validateOffloadConfig({ target: 'disk', backend: 'unsloth', device: 'cpu' })).toEqual([UNSLOTH]);
  });

  test('mlx is refused with the original message, and only that', () => {
    expect(validateOffloadConfig({ target: 'cpu', backend: 'mlx', device: 'mps' })).toEqual([MLX]);
    expect(validateOffloadConfig({ target: 'disk', backend: 'mlx', device: 'cpu' })).toEqual([MLX]);
  });

  test("target 'cpu' needs CUDA: the original message with the device named", () => {
    for (const device of ['cpu', 'mps']) {
      const errors = validateOffloadConfig({ target: 'cpu', backend: 'transformers', device });
      expect(errors).toHaveLength(1);
      expect(errors[0]).toMatch(
        new RegExp(`^Activation offloading requires CUDA training\\. Current device: ${device}\\. `),
      );
      expect(errors[0]).toContain("Use activation_offloading='disk' to relieve host RAM.");
    }
    expect(validateOffloadConfig({ target: 'cpu', backend: 'transformers', device: 'cuda' })).toEqual([]);
    expect(validateOffloadConfig({ target: 'cpu', backend: 'onnxruntime', device: 'cuda:1' })).toEqual([]);
  });

  test("'disk' without a save dir: the original message", () => {
    expect(validateOffloadConfig({ target: 'disk', backend: 'transformers', device: 'cuda' })).toEqual([NO_SAVE_DIR]);
    expect(validateOffloadConfig({ target: 'disk', backend: 'onnxruntime', device: 'cpu', saveDir: '' })).toEqual([
      NO_SAVE_DIR,
    ]);
    expect(validateOffloadConfig({ target: 'disk', backend: 'onnxruntime', device: 'cpu', saveDir: null })).toEqual([
      NO_SAVE_DIR,
    ]);
  });

  test("'disk' is valid on any device (it relieves host RAM too) and does not create the dir", () => {
    const cwd = useTempDir();
    for (const device of ['cpu', 'cuda', 'mps']) {
      expect(
        validateOffloadConfig({ target: 'disk', backend: 'onnxruntime', device, saveDir: 'scratch/acts', cwd }),
      ).toEqual([]);
    }
    expect(existsSync(join(cwd, 'scratch'))).toBe(false);
  });

  test('several problems are all reported', () => {
    const errors = validateOffloadConfig({ target: 'cpu', backend: 'jax', device: 'cpu' });
    expect(errors).toHaveLength(2);
    expect(errors[0]).toBe(
      "Activation offloading does not know the backend 'jax'. Use backend: onnxruntime or backend: transformers.",
    );
    expect(errors[1]).toMatch(/^Activation offloading requires CUDA training\. Current device: cpu\./);
  });

  test('an unknown target is refused with the original context-manager wording', () => {
    expect(validateOffloadConfig({ target: 'gpu', backend: 'onnxruntime', device: 'cuda' })).toEqual([
      "Unknown activation_offloading target: 'gpu'. Expected null, 'cpu', or 'disk'.",
    ]);
    expect(validateOffloadConfig({ target: 'keep', backend: 'onnxruntime', device: 'cuda' })).toHaveLength(1);
  });
});

describe('validateOffloadConfig — save dir must resolve under cwd', () => {
  const disk = (saveDir: string, cwd: string): string[] =>
    validateOffloadConfig({ target: 'disk', backend: 'onnxruntime', device: 'cpu', saveDir, cwd });

  test('`..` escapes and absolute paths elsewhere are refused', () => {
    const root = useTempDir();
    const cwd = join(root, 'project');
    mkdirSync(cwd);
    const up = disk('../elsewhere', cwd);
    expect(up).toHaveLength(1);
    expect(up[0]).toContain(
      `save_dir '../elsewhere' resolves to '${join(root, 'elsewhere')}', outside the working directory '${cwd}'`,
    );
    expect(disk('acts/../../x', cwd)[0]).toContain('outside the working directory');
    expect(disk(join(root, 'abs'), cwd)[0]).toContain('outside the working directory');
    expect(disk('.', cwd)[0]).toContain('is the working directory itself');
    // `..` that stays inside is fine
    expect(disk('a/../b', cwd)).toEqual([]);
    expect(disk(join(cwd, 'abs-inside'), cwd)).toEqual([]);
  });

  test('a symlink pointing out of cwd is refused, one pointing inside is accepted', () => {
    const root = useTempDir();
    const cwd = join(root, 'project');
    mkdirSync(join(cwd, 'real'), { recursive: true });
    mkdirSync(join(root, 'outside'));
    symlinkSync(join(root, 'outside'), join(cwd, 'link-out'));
    symlinkSync(join(cwd, 'real'), join(cwd, 'link-in'));
    const out = disk('link-out', cwd);
    expect(out).toHaveLength(1);
    expect(out[0]).toContain(`resolves through a symlink to '${join(root, 'outside')}'`);
    // also when the final part does not exist yet
    expect(disk('link-out/new/deeper', cwd)[0]).toContain(`'${join(root, 'outside', 'new', 'deeper')}'`);
    expect(disk('link-in', cwd)).toEqual([]);
    expect(disk('link-in/sub', cwd)).toEqual([]);
  });

  test('a save dir that is a file, or a dangling symlink, is refused', () => {
    const cwd = useTempDir();
    writeFileSync(join(cwd, 'file'), 'x');
    symlinkSync(join(cwd, 'nowhere'), join(cwd, 'dangling'));
    expect(disk('file', cwd)[0]).toContain('is not a directory');
    expect(disk('dangling', cwd)[0]).toContain('dangling symlink');
  });
});

describe('checkOffloadConfig', () => {
  test('returns errors and warnings', () => {
    const cwd = useTempDir();
    expect(checkOffloadConfig({ target: 'cpu', backend: 'onnxruntime', device: 'cuda', saveDir: 'acts', cwd })).toEqual(
      {
        errors: [],
        warnings: ["save_dir 'acts' is only used by activation_offloading='disk'; it is ignored for 'cpu'."],
      },
    );
    expect(checkOffloadConfig({ target: null, backend: 'x', device: 'y' })).toEqual({ errors: [], warnings: [] });
  });
});
