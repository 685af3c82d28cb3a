set terminal svg size 960,600 dynamic enhanced font 'sans,12' background rgb 'white'
set output 'latency.svg'
set title 'Latency against throughput (each point: one load of the sweep)'
set xlabel 'requests/s answered correctly'
set ylabel 'latency, ms'
set key top left
set grid
set arrow 1 from graph 0, first 1000 to graph 1, first 1000 nohead dt 3 lc rgb 'red'
set arrow 2 from graph 0, first 650 to graph 1, first 650 nohead dt 3 lc rgb 'orange'
set label 1 'p99 bound 1000 ms' at graph 0.01, first 1000 offset 0,0.6 tc rgb 'red'
set label 2 'mean bound 650 ms' at graph 0.01, first 650 offset 0,0.6 tc rgb 'orange'
plot 'latency_single.dat' using 2:5 with linespoints lw 2 pt 7 lc 1 title 'single p99', 'latency_single.dat' using 2:3 with linespoints lw 1 dt 2 pt 6 lc 1 title 'single mean', 'latency_processes.dat' using 2:5 with linespoints lw 2 pt 7 lc 2 title 'processes p99', 'latency_processes.dat' using 2:3 with linespoints lw 1 dt 2 pt 6 lc 2 title 'processes mean', 'latency_mps.dat' using 2:5 with linespoints lw 2 pt 7 lc 3 title 'mps p99', 'latency_mps.dat' using 2:3 with linespoints lw 1 dt 2 pt 6 lc 3 title 'mps mean', 'latency_mps_batch.dat' using 2:5 with linespoints lw 2 pt 7 lc 4 title 'mps+batch p99', 'latency_mps_batch.dat' using 2:3 with linespoints lw 1 dt 2 pt 6 lc 4 title 'mps+batch mean', 'latency_lanes_batch.dat' using 2:5 with linespoints lw 2 pt 7 lc 5 title 'lanes+batch p99', 'latency_lanes_batch.dat' using 2:3 with linespoints lw 1 dt 2 pt 6 lc 5 title 'lanes+batch mean', 'latency_green_batch.dat' using 2:5 with linespoints lw 2 pt 7 lc 6 title 'green+batch p99', 'latency_green_batch.dat' using 2:3 with linespoints lw 1 dt 2 pt 6 lc 6 title 'green+batch mean'
unset arrow
unset label
set output 'batch_sizes.svg'
set title 'Batch sizes the server ran (each arm at its best point under the SLO)'
set xlabel 'batch size'
set ylabel '% of batches'
set key top right
set grid ytics
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set yrange [0:*]
plot 'batch_sizes.dat' using 2:xtic(1) title 'single (load 4)', 'batch_sizes.dat' using 3 title 'processes (load 24)', 'batch_sizes.dat' using 4 title 'mps (load 24)', 'batch_sizes.dat' using 5 title 'mps+batch (load 100)', 'batch_sizes.dat' using 6 title 'lanes+batch (load 100)', 'batch_sizes.dat' using 7 title 'green+batch (load 100)'
unset style
set yrange [*:*]
set terminal svg size 960,760 dynamic enhanced font 'sans,12' background rgb 'white'
set output 'gpu.svg'
set multiplot layout 2,1 title 'GPU over the sweep (NVML, every 100 ms)'
set xlabel 's since the sweep began'
set grid
set key top left
set ylabel 'utilization, %'
set yrange [0:105]
plot 'gpu_single_0.dat' using 1:2 with lines lw 1 title 'single GPU 0', 'gpu_processes_0.dat' using 1:2 with lines lw 1 title 'processes GPU 0', 'gpu_mps_0.dat' using 1:2 with lines lw 1 title 'mps GPU 0', 'gpu_mps_batch_0.dat' using 1:2 with lines lw 1 title 'mps+batch GPU 0', 'gpu_lanes_batch_0.dat' using 1:2 with lines lw 1 title 'lanes+batch GPU 0', 'gpu_green_batch_0.dat' using 1:2 with lines lw 1 title 'green+batch GPU 0'
set ylabel 'memory used, GiB'
set yrange [0:*]
plot 'gpu_single_0.dat' using 1:3 with lines lw 2 title 'single GPU 0', 'gpu_processes_0.dat' using 1:3 with lines lw 2 title 'processes GPU 0', 'gpu_mps_0.dat' using 1:3 with lines lw 2 title 'mps GPU 0', 'gpu_mps_batch_0.dat' using 1:3 with lines lw 2 title 'mps+batch GPU 0', 'gpu_lanes_batch_0.dat' using 1:3 with lines lw 2 title 'lanes+batch GPU 0', 'gpu_green_batch_0.dat' using 1:3 with lines lw 2 title 'green+batch GPU 0'
unset multiplot
set yrange [*:*]
