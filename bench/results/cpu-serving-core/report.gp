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
plot 'latency_lanes__before_.dat' using 2:5 with linespoints lw 2 pt 7 lc 1 title 'lanes (before) p99', 'latency_lanes__before_.dat' using 2:3 with linespoints lw 1 dt 2 pt 6 lc 1 title 'lanes (before) mean', 'latency_lanes__after_.dat' using 2:5 with linespoints lw 2 pt 7 lc 2 title 'lanes (after) p99', 'latency_lanes__after_.dat' using 2:3 with linespoints lw 1 dt 2 pt 6 lc 2 title 'lanes (after) mean', 'latency_processes__before_.dat' using 2:5 with linespoints lw 2 pt 7 lc 3 title 'processes (before) p99', 'latency_processes__before_.dat' using 2:3 with linespoints lw 1 dt 2 pt 6 lc 3 title 'processes (before) mean', 'latency_processes__after_.dat' using 2:5 with linespoints lw 2 pt 7 lc 4 title 'processes (after) p99', 'latency_processes__after_.dat' using 2:3 with linespoints lw 1 dt 2 pt 6 lc 4 title 'processes (after) mean'
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
plot 'batch_sizes.dat' using 2:xtic(1) title 'lanes (before) (load 8)', 'batch_sizes.dat' using 3 title 'lanes (after) (load 8)', 'batch_sizes.dat' using 4 title 'processes (before) (load 8)', 'batch_sizes.dat' using 5 title 'processes (after) (load 8)'
unset style
set yrange [*:*]
