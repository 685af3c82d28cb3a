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
plot 'latency_batch.dat' using 2:5 with linespoints lw 2 pt 7 lc 1 title 'batch p99', 'latency_batch.dat' using 2:3 with linespoints lw 1 dt 2 pt 6 lc 1 title 'batch mean', 'latency_batch_spread.dat' using 2:5 with linespoints lw 2 pt 7 lc 2 title 'batch+spread p99', 'latency_batch_spread.dat' using 2:3 with linespoints lw 1 dt 2 pt 6 lc 2 title 'batch+spread mean'
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
plot 'batch_sizes.dat' using 2:xtic(1) title 'batch (load 8)', 'batch_sizes.dat' using 3 title 'batch+spread (load 8)'
unset style
set yrange [*:*]
