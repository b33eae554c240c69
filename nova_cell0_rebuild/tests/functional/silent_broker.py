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

"""A broker on a local TCP port that speaks AMQP 0-9-1, then falls silent.

Enough of RabbitMQ for oslo.messaging's real rabbit driver to connect and
publish notifications (with publisher confirms), so that an outage can be
staged on a connection the driver already pooled: ``fall_silent()`` keeps
every connection open and the port accepting, but answers nothing any
more, as a broker that hangs does; ``answer_again()`` ends the outage.
"""

import socket
import struct
import threading

from amqp import serialization

_FRAME_END = b'\xce'
_METHOD, _HEADER, _BODY = 1, 2, 3

# Request (class, method) -> (reply, its arguments' format, values).
_REPLIES = {
    (10, 11): ((10, 30), 'BlB', (0, 131072, 0)),      # Start-Ok -> Tune
    (10, 40): ((10, 41), 's', ('',)),                 # Open -> Open-Ok
    (10, 50): ((10, 51), '', ()),                     # Close -> Close-Ok
    (20, 10): ((20, 11), 'S', ('',)),                 # Channel.Open
    (20, 40): ((20, 41), '', ()),                     # Channel.Close
    (40, 10): ((40, 11), '', ()),                     # Exchange.Declare
    (50, 20): ((50, 21), '', ()),                     # Queue.Bind
    (60, 10): ((60, 11), '', ()),                     # Basic.Qos
    (85, 10): ((85, 11), '', ()),                     # Confirm.Select
}


def _frame(kind, channel, payload):
    return struct.pack('>BHI', kind, channel, len(payload)) + payload + (
        _FRAME_END)


def _method(channel, method, fmt='', values=()):
    args = serialization.dumps(fmt, list(values)) if fmt else b''
    return _frame(_METHOD, channel, struct.pack('>HH', *method) + args)


class SilentBroker(object):
    """Listens on 127.0.0.1; ``url`` is its rabbit transport URL.

    :ivar published: the exchange of each message published.
    :ivar bodies: the body frames received (the messages, as JSON).
    """

    def __init__(self):
        self.answering = threading.Event()
        self.answering.set()
        self.published = []
        self.bodies = []
        self._server = socket.socket()
        self._server.bind(('127.0.0.1', 0))
        self._server.listen(16)
        self.url = 'rabbit://guest:guest@127.0.0.1:%d/' % (
            self._server.getsockname()[1])
        self._clients = []
        self._stopped = False
        threading.Thread(target=self._accept, daemon=True).start()

    def fall_silent(self):
        self.answering.clear()

    def answer_again(self):
        self.answering.set()

    def stop(self):
        self._stopped = True
        self.answer_again()
        for sock in [self._server] + self._clients:
            try:
                sock.close()
            except OSError:
                pass

    def _accept(self):
        while not self._stopped:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            self._clients.append(client)
            threading.Thread(target=self._serve, args=(client,),
                             daemon=True).start()

    def _read(self, client, size):
        data = b''
        while len(data) < size:
            chunk = client.recv(size - len(data))
            if not chunk:
                raise EOFError()
            data += chunk
        return data

    def _serve(self, client):
        try:
            self._read(client, 8)  # the protocol header
            self.answering.wait()
            client.sendall(_method(0, (10, 10), 'ooFSS', (
                0, 9, {'capabilities': {'publisher_confirms': True}},
                'PLAIN AMQPLAIN', 'en_US')))
            self._session(client)
        except (EOFError, OSError):
            pass

    def _session(self, client):
        confirmed = set()
        delivery_tag = 0
        # Bytes of content each channel still waits for, as its header
        # said: a message is confirmed once it is all here (and recorded),
        # as a broker confirms it, not at its header.
        awaited = {}
        while not self._stopped:
            kind, channel, size = struct.unpack('>BHI',
                                                self._read(client, 7))
            payload = self._read(client, size + 1)[:-1]
            # A hung broker: it reads, but answers nothing any more.
            self.answering.wait()
            if kind != _METHOD:
                if kind == _HEADER:
                    awaited[channel] = struct.unpack('>Q', payload[4:12])[0]
                if kind == _BODY:
                    self.bodies.append(payload)
                    awaited[channel] -= len(payload)
                if awaited.get(channel) == 0 and channel in confirmed:
                    del awaited[channel]
                    delivery_tag += 1
                    client.sendall(_method(channel, (60, 80), 'Lb',
                                           (delivery_tag, False)))
                continue
            method = struct.unpack('>HH', payload[:4])
            if method == (60, 40):   # Basic.Publish
                self.published.append(serialization.loads(
                    'Bss', payload, 4)[0][1])
                continue
            if method == (85, 10):
                confirmed.add(channel)
            if method == (50, 10):   # Queue.Declare -> Declare-Ok
                queue = serialization.loads('Bs', payload, 4)[0][1]
                client.sendall(_method(channel, (50, 11), 'sll',
                                       (queue, 0, 0)))
            elif method in _REPLIES:
                reply, fmt, values = _REPLIES[method]
                client.sendall(_method(channel, reply, fmt, values))
