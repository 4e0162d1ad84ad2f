/**
 * Where a models root may be: a folder for data, found by its real path (links resolved), never a
 * virtual file system or an operating-system folder. The installer creates `<root>/<id>` folders
 * and the folder picker shows what is under the root, so a root of `/etc` (or a link to it, or to
 * `/proc/self`) would let a UI client write system folders and browse them.
 *
 *   refused anywhere below: /proc /sys /dev (and any procfs, sysfs, cgroup... mount, by statfs),
 *                           /etc /boot /bin /sbin /lib* /usr (but /usr/local/<x> is fine)
 *   refused as the folder itself: / /home /root /var /tmp /opt /srv /mnt /media /run /usr/local
 */
import { realpath, statfs } from 'node:fs/promises';
import path from 'node:path';

const VIRTUAL_TREES = ['/proc', '/sys', '/dev'];
const SYSTEM_TREES = ['/etc', '/boot', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32', '/usr'];
const TOP_FOLDERS = new Set([
  '/',
  '/home',
  '/root',
  '/var',
  '/tmp',
  '/opt',
  '/srv',
  '/mnt',
  '/media',
  '/run',
  '/usr/local',
]);

/** statfs f_type of kernel file systems that hold no data (linux/magic.h). */
const VIRTUAL_FS: ReadonlyMap<number, string> = new Map([
  [0x9fa0, 'procfs'],
  [0x62656572, 'sysfs'],
  [0x1cd1, 'devpts'],
  [0x27e0eb, 'cgroup'],
  [0x63677270, 'cgroup2'],
  [0x64626720, 'debugfs'],
  [0x74726163, 'tracefs'],
  [0x73636673, 'securityfs'],
  [0x62656570, 'configfs'],
  [0xcafe4a11, 'bpf'],
  [0x6165676c, 'pstore'],
  [0xde5e81e4, 'efivarfs'],
  [0x65735543, 'fusectl'],
  [0x19800202, 'mqueue'],
  [0x42494e4d, 'binfmt_misc'],
]);

const inside = (tree: string, p: string) => p === tree || p.startsWith(`${tree}/`);

/**
 * The real path of `target`: the real path of its nearest existing ancestor with the missing rest
 * appended (so a root about to be made is judged where it will really be).
 */
export async function realLocation(target: string): Promise<{ real: string; existing: string }> {
  let existing = path.resolve(target);
  const rest: string[] = [];
  for (;;) {
    const real = await realpath(existing).catch(() => undefined);
    if (real !== undefined) return { real: path.join(real, ...rest.reverse()), existing: real };
    const parent = path.dirname(existing);
    if (parent === existing) return { real: path.resolve(target), existing: '/' };
    rest.push(path.basename(existing));
    existing = parent;
  }
}

/**
 * Why `target` cannot be a models root (a sentence naming the folder at fault), or undefined when
 * it can. Only the path is judged: whether it can be made and is a folder is checked by the caller.
 */
export async function refusedRootLocation(target: string): Promise<string | undefined> {
  const { real, existing } = await realLocation(target);
  const shown = real === path.resolve(target) ? '' : ` (${path.resolve(target)} leads to ${real})`;
  for (const tree of VIRTUAL_TREES)
    if (inside(tree, real)) return `${real} is inside ${tree}, a virtual file system${shown}`;
  const fsType = await statfs(existing).then(
    (s) => VIRTUAL_FS.get(Number(s.type)),
    () => undefined,
  );
  if (fsType) return `${real} is on a ${fsType} file system, which holds no data${shown}`;
  for (const tree of SYSTEM_TREES)
    if (inside(tree, real) && !(tree === '/usr' && real.startsWith('/usr/local/')))
      return `${real} is inside ${tree}, an operating-system folder${shown}`;
  if (TOP_FOLDERS.has(real)) return `${real} is a top-level system folder; choose a folder inside it${shown}`;
  return undefined;
}
