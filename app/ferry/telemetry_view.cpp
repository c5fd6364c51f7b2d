// Wires lib/telemetry to this process: the view its commands and exporter
// read (ferry/telemetry/view.h), built from the workers once they are set up.
#include "app.h"
#include "ferry/telemetry/view.h"

namespace ferry::app {

telemetry::process_view telemetry_view(app_state &app) {
    telemetry::process_view v;
    v.config_snapshot = [] { return the_app->reload.snapshot(); };
    v.reloads = &app.reload.counters();
    v.reload = [](telemetry::reload_report &r, bool check, const std::string &path) {
        the_app->reload.reload(r, check, path);
    };
    v.drivers_dir = app.drivers_dir;
    v.ports = app.ports;
    v.mesh = app.mesh.get();
    v.proxy_shared = app.proxy_shared.get();
    v.settings = &app.settings;
    v.wake_all = wake_all_workers;
    for (const auto &w : app.workers) {
        telemetry::lcore_view &l = v.lcores.emplace_back();
        l.lcore = w->lcore;
        l.index = w->index;
        l.loop = w->loop.get();
        l.reactor = &w->rc;
        l.io = &w->io;
        for (size_t i = 0; i < app.ports.size(); ++i) {
            telemetry::lcore_port_view &p = l.ports.emplace_back();
            p.net = w->net_counters[i];
            if (i < w->tcp_counters.size()) p.tcp = w->tcp_counters[i].get();
            if (i < w->tcp_layers.size()) {
                p.blocks = &w->tcp_layers[i]->blocks();
                p.tcp_layer = w->tcp_layers[i].get();
            }
            if (app.ports[i].spec.fault.enabled() && i < w->queues.size())
                p.fault = &w->queues[i]->io->faults();
        }
        l.proxy = w->proxy.get();
        l.out = w->out.get();
    }
    return v;
}

}  // namespace ferry::app
