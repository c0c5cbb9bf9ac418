#!/usr/bin/python3
"""A real RTSP camera for the stream tests (test/cli/video/stream*.int.test.ts).

GStreamer's RTSP server (Debian: gir1.2-gst-rtsp-server-1.0, python3-gi,
gstreamer1.0-plugins-{base,good,bad}) serves rtsp://127.0.0.1:PORT/cam from an
H.264 MPEG-TS stream that ffmpeg sends to udp://127.0.0.1:UDP_PORT (stream copy:
the keyframes and frame count are ffmpeg's). One shared pipeline for every client,
as a camera has. Prints "ready" on stdout once it listens; runs until killed.

Cameras of other codecs (issue 41: cameras that are transcoded, a camera whose codec
changes after a reconnect): CODEC vp8 or mjpeg serves GStreamer's own live test pattern
in VP8 or Motion JPEG (RTP/JPEG, as IP cameras send it) instead (320x240 at 15 fps), and
ignores the UDP feed; mpeg4 serves the feed's MPEG-4 Part 2 (ffmpeg's mpeg4 encoder).

Usage: rtsp-server.py PORT UDP_PORT [h264|h265|mpeg4|vp8|mjpeg]
"""
import sys

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstRtspServer", "1.0")
from gi.repository import GLib, Gst, GstRtspServer  # noqa: E402


# A client that reads slowly must not cost the feed anything: the queue holds what the
# client has not taken (the default holds 1 s, then blocks the UDP reader, and the kernel
# drops the feed's datagrams once its socket buffer is full; udpsrc asks for a bigger one).
UNBOUNDED_QUEUE = "queue max-size-buffers=0 max-size-bytes=0 max-size-time=0"


def main() -> None:
    port, udp_port = sys.argv[1], int(sys.argv[2])
    codec = sys.argv[3] if len(sys.argv) > 3 else "h264"
    live = "videotestsrc is-live=true pattern=ball ! video/x-raw,width=320,height=240,framerate=15/1 ! videoconvert"
    launches = {
        c: (
            f"( udpsrc address=127.0.0.1 port={udp_port} buffer-size=4194304 caps=video/mpegts,systemstream=true "
            f"! tsdemux latency=0 ! {c}parse config-interval=-1 ! {UNBOUNDED_QUEUE} ! rtp{c}pay name=pay0 pt=96 config-interval=-1 )"
        )
        for c in ("h264", "h265")
    }
    launches["mpeg4"] = (
        f"( udpsrc address=127.0.0.1 port={udp_port} buffer-size=4194304 caps=video/mpegts,systemstream=true "
        f"! tsdemux latency=0 ! mpeg4videoparse config-interval=-1 ! {UNBOUNDED_QUEUE} ! rtpmp4vpay name=pay0 pt=96 config-interval=-1 )"
    )
    launches["vp8"] = f"( {live} ! vp8enc deadline=1 keyframe-max-dist=15 ! rtpvp8pay name=pay0 pt=96 )"
    launches["mjpeg"] = f"( {live} ! video/x-raw,format=I420 ! jpegenc quality=80 ! rtpjpegpay name=pay0 pt=26 )"
    if codec not in launches:
        sys.exit(f"rtsp-server: codec {codec} is not one of {', '.join(launches)}")
    Gst.init(None)
    server = GstRtspServer.RTSPServer()
    server.set_address("127.0.0.1")
    server.set_service(port)
    factory = GstRtspServer.RTSPMediaFactory()
    factory.set_launch(launches[codec])
    factory.set_shared(True)
    server.get_mount_points().add_factory("/cam", factory)
    # A client that reads slowly (a test process starved under CI load, a SIGSTOPped
    # stream) gets back pressure instead of lost RTP packets: GStreamer's default drops
    # what does not fit a TCP client's backlog, which damages frames the capture then cuts
    # and declares, as a real camera would (test/support/stream-child.ts checkedChain).
    server.connect("client-connected", lambda _server, client: client.set_property("drop-backlog", False))
    if server.attach(None) == 0:
        sys.exit(f"rtsp-server: cannot listen on 127.0.0.1:{port}")
    print("ready", flush=True)
    GLib.MainLoop().run()


if __name__ == "__main__":
    main()
