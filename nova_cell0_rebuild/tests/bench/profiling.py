# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.

"""A sampling profiler that understands eventlet, for ``--profile``.

cProfile charges whatever another greenthread runs while the API request
waits (the conductor scheduling the server, for one, once the request has
cast to it) to the API function that yielded. Here a real OS thread
samples the stack of the running greenthread every millisecond instead; a
sample belongs to the API request only when its stack holds the bench's
``Harness.call``. Whatever ran in other greenthreads meanwhile is counted
apart.
"""

import collections
import os
import sys

from eventlet import patcher

_threading = patcher.original('threading')
_time = patcher.original('time')

OURS = os.path.join('nova_cell0_rebuild', '')
BENCH = os.path.join('nova_cell0_rebuild', 'tests', 'bench', '')
SITE = os.path.join('site-packages', '')


def _where(code):
    path = code.co_filename
    for marker in (OURS, SITE):
        if marker in path:
            path = path.split(marker, 1)[1]
            if marker == OURS:
                path = 'nova_cell0_rebuild/' + path
            break
    return '%s:%s' % (path, code.co_name)


def _is_ours(key):
    return key.startswith('nova_cell0_rebuild/') and not key.startswith(
        'nova_cell0_rebuild/tests/')


class Sampler(object):
    """Sample the main thread's running stack while a window is open."""

    def __init__(self, interval=0.001):
        self.interval = interval
        self.samples = collections.Counter()
        self.windows = 0
        self.window_seconds = 0.0
        self._open_since = None
        self._target = _threading.get_ident()
        self._stop = _threading.Event()
        self._thread = None

    def _run(self):
        while not self._stop.is_set():
            _time.sleep(self.interval)
            if self._open_since is None:
                continue
            frame = sys._current_frames().get(self._target)
            stack = []
            while frame is not None:
                stack.append(_where(frame.f_code))
                frame = frame.f_back
            self.samples[tuple(reversed(stack))] += 1

    def start(self):
        if self._thread is None:
            self._previous_interval = sys.getswitchinterval()
            sys.setswitchinterval(self.interval / 2)
            self._thread = _threading.Thread(target=self._run, daemon=True)
            self._thread.start()
        self._open_since = _time.perf_counter()

    def stop(self):
        self.window_seconds += _time.perf_counter() - self._open_since
        self._open_since = None
        self.windows += 1

    def close(self):
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            sys.setswitchinterval(self._previous_interval)
            self._thread = None

    def report(self, title, top=40):
        """A text report: where the API request spends its time."""
        total = sum(self.samples.values())
        if not total or not self.windows:
            return '%s: no samples' % title
        per_sample = self.window_seconds / total
        per_call = 1000.0 * per_sample / self.windows
        in_api = collections.Counter()
        inclusive = collections.Counter()
        ours_to_callee = collections.Counter()
        deepest_nova = collections.defaultdict(collections.Counter)
        for stack, count in self.samples.items():
            if not any(key.endswith('harness.py:call') for key in stack):
                continue
            in_api[True] += count
            for key in set(stack):
                inclusive[key] += count
            # The innermost frame of ours, and what it was running.
            ours = [i for i, key in enumerate(stack) if _is_ours(key)]
            if ours:
                index = ours[-1]
                callee = (stack[index + 1] if index + 1 < len(stack)
                          else '(own code)')
                ours_to_callee[(stack[index], callee)] += count
                nova = [key for key in stack[index + 1:]
                        if key.startswith('nova/')]
                if nova:
                    deepest_nova[(stack[index], callee)][nova[-1]] += count
            else:
                ours_to_callee[('(not in nova_cell0_rebuild)',
                                stack[-1] if stack else '?')] += count
        api = in_api[True]
        lines = [
            '%s: %d calls, %.1f ms per call (wall, sampled), %d samples; '
            '%.1f ms per call in the API request, %.1f ms in other '
            'greenthreads that ran meanwhile'
            % (title, self.windows, 1000.0 * self.window_seconds /
               self.windows, total, api * per_call, (total - api) * per_call),
            '',
            'Inclusive time per call in the API request (ours, then Nova '
            'and libraries), ms:']
        ranked = [key for key, _n in inclusive.most_common()
                  if not key.startswith(BENCH.replace(os.sep, '/'))]
        for key in [k for k in ranked if _is_ours(k)][:top]:
            lines.append('  %7.1f  %s' % (inclusive[key] * per_call, key))
        lines.append('  ---')
        for key in [k for k in ranked if not _is_ours(k)
                    and 'nova_cell0_rebuild/tests' not in k][:top // 2]:
            lines.append('  %7.1f  %s' % (inclusive[key] * per_call, key))
        lines += ['', 'Innermost function of ours -> what it was running '
                  '(exclusive of other ours), ms per call:']
        for (ours, callee), count in ours_to_callee.most_common(top):
            lines.append('  %7.1f  %s -> %s' % (count * per_call, ours,
                                                callee))
            if len(lines) < 3 * top and count * per_call >= 2.0:
                for nova, n in deepest_nova[(ours, callee)].most_common(3):
                    lines.append('  %7s    deepest Nova frame %5.1f  %s'
                                 % ('', n * per_call, nova))
        return '\n'.join(lines)
