"""The playground's Voilà server (`make playground`): one kernel per page, freed when the page goes.

    python -m course.playground_server NOTEBOOK --port=8866 [Voilà's own options]

Voilà starts a kernel (a Python process holding torch, about 0.5 GB) for every page it serves,
reloads included. Three things free it here, each where the one before cannot:

1. Leaving the page. Voilà's page sends a shutdown request as it unloads, carrying the `_xsrf`
   cookie as the server's cross-site check asks; but Voilà 0.5 never sets that cookie, so the
   request is refused with 403 and the kernel stays (voila-dashboards/voila#1458). A prelaunch
   hook (`set_xsrf_cookie`) sets it on the page's response; the check itself stays on.
2. A page that goes without a word (a tab closed before its request leaves, a browser that
   crashes, a laptop put to sleep): once a kernel's last connection has been closed for
   `DISCONNECT_GRACE` seconds, it is shut down. A page that reconnects within that time keeps it.
3. Culling: a kernel that no page is connected to and that has done nothing for `CULL_IDLE`
   seconds is shut down (checked every `CULL_INTERVAL` seconds): a page closed while Voilà still
   ran its cells never connects at all. A kernel with a page connected is never culled.
"""
from __future__ import annotations

import sys

from jupyter_server.services.kernels.kernelmanager import AsyncMappingKernelManager
from tornado.ioloop import IOLoop
from traitlets import Float, default
from traitlets.config import Config

DISCONNECT_GRACE = 20.0  # seconds: a page that comes back sooner (a network hiccup) keeps its kernel
CULL_IDLE = 600          # seconds idle and unconnected before a kernel is culled
CULL_INTERVAL = 60       # seconds between two looks for such kernels


def set_xsrf_cookie(handler, notebook, cwd):
    """Voilà's prelaunch hook, run before the page's first byte is sent: reading tornado's
    `xsrf_token` sets the `_xsrf` cookie that the page's shutdown request then carries."""
    handler.xsrf_token  # noqa: B018  (the read sets the cookie)
    return None  # the notebook as it is


class PlaygroundKernelManager(AsyncMappingKernelManager):
    """Jupyter's kernel manager, culling idle unconnected kernels, and shutting a kernel down
    once its last connection has stayed closed for `disconnect_grace` seconds."""

    disconnect_grace = Float(DISCONNECT_GRACE, config=True,
                             help="seconds a kernel outlives its last connection")

    @default("cull_idle_timeout")
    def _cull_idle_timeout(self):
        return CULL_IDLE

    @default("cull_interval")
    def _cull_interval(self):
        return CULL_INTERVAL

    def notify_disconnect(self, kernel_id):
        super().notify_disconnect(kernel_id)
        if self._unconnected(kernel_id):
            IOLoop.current().call_later(self.disconnect_grace, self._shut_down_if_gone, kernel_id)

    def _unconnected(self, kernel_id) -> bool:
        return kernel_id in self and self.kernel_model(kernel_id)["connections"] <= 0

    async def _shut_down_if_gone(self, kernel_id):
        if self._unconnected(kernel_id):
            self.log.info("Kernel %s: no page connected for %.0f s, shutting it down", kernel_id,
                          self.disconnect_grace)
            await self.shutdown_kernel(kernel_id)


def config() -> Config:
    """What the playground sets on Voilà (its command line adds to it)."""
    settings = Config()
    settings.VoilaConfiguration.prelaunch_hook = set_xsrf_cookie
    settings.VoilaConfiguration.multi_kernel_manager_class = PlaygroundKernelManager
    settings.MappingKernelManager.cull_connected = False
    settings.MappingKernelManager.cull_busy = False
    return settings


def main(argv=None) -> int:
    from voila.app import Voila

    Voila.launch_instance(sys.argv[1:] if argv is None else argv, config=config())
    return 0


if __name__ == "__main__":
    sys.exit(main())
